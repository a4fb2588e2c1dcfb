import Foundation
import Testing

/// `dlpipe status` tells a run that is going on from one that was killed: a
/// run with no end whose lock is free now died (issue 20; it said "(not ended)").
@Suite struct StatusRunsTests {
    @Test func aKilledRunIsShownKilledAndALiveOneRunning() async throws {
        let server = try FaultServer()
        let out = try TempDir.make("status-runs")
        try server.put("big.bin", randomBytes: 200_000)
        let url = server.url("/files/big.bin?stall=50000")
        let live = try Subprocess(Paths.binary, ["get", url, "-d", out, "--json", "--timeout", "300"])
        #expect(await offThePool { live.waitForLine(containing: "\"progress\"") }, "no progress event")
        let during = try await runs(out)
        #expect(during.pid == Int(live.pid), "\(during)")
        #expect(during.statuses == ["running"], "\(during)")
        let text = try await DLPipeRun.run(["status", out])
        #expect(text.stdout.contains(", running, pid \(live.pid)"), "\(text.stdout)")
        live.signal(SIGKILL)
        #expect(await offThePool { live.waitForExit() } == 128 + SIGKILL)
        let after = try await runs(out)
        #expect(after.pid == nil, "nobody holds the lock: \(after)")
        #expect(after.statuses == ["killed"], "\(after)")
        let killedText = try await DLPipeRun.run(["status", out])
        #expect(killedText.stdout.contains(", killed, pid \(live.pid)"), "\(killedText.stdout)")
        #expect(!killedText.stdout.contains("not ended"))
        let clean = try await DLPipeRun.run(["get", server.url("/files/big.bin"), "-d", out])
        #expect(clean.status == 0, "\(clean.stderr)")
        #expect(try await runs(out).statuses == ["ended", "killed"])
    }

    /// A re-run whose handler gives the file another name places the new one
    /// there; the file placed before stays under the old name, and status
    /// lists it as placed but no longer tracked, until it is removed.
    @Test func aFileLeftForANewNameIsListedAsNoLongerTracked() async throws {
        let server = try FaultServer()
        let job = try LuaJob()
        let out = try TempDir.make("status-untracked")
        try server.put("a.txt", bytes: Array("alpha".utf8))
        try job.write("rename.lua", """
            dl.config{ refresh = "always" }
            dl.add(dl.var.url)
            dl.on("response", function(d, r) d.name = dl.var.name end)
            """)
        for name in ["first.txt", "second.txt"] {
            let run = try await job.run("rename.lua", out: out, ["--var", "url=\(server.url("/files/a.txt"))", "--var", "name=\(name)"])
            #expect(run.status == 0, "\(run.stderr)")
        }
        #expect(listing(out) == ["first.txt", "second.txt"])
        let json = try await DLPipeRun.run(["status", out, "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        let untracked = object?["untracked"] as? [[String: Any]] ?? []
        #expect(untracked.map { $0["path"] as? String } == ["first.txt"], "\(json.stdout)")
        let text = try await DLPipeRun.run(["status", out])
        #expect(text.stdout.contains("no longer tracked"), "\(text.stdout)")
        #expect(text.stdout.contains("  first.txt: "), "\(text.stdout)")
        try FileManager.default.removeItem(atPath: out + "/first.txt")
        let removed = try await DLPipeRun.run(["status", out])
        #expect(!removed.stdout.contains("no longer tracked"), "\(removed.stdout)")
    }

    /// Failures read as lines: a handler's traceback as indented lines (not
    /// `\u{a}` escapes), and a failed download's kept part file with its size.
    @Test func failuresShowTracebacksAsLinesAndWhatIsKept() async throws {
        let server = try FaultServer()
        let job = try LuaJob()
        let out = try TempDir.make("status-failures")
        try server.put("h.txt", bytes: Array("hello".utf8))
        try server.put("cut.bin", randomBytes: 100_000)
        try job.write("herr.lua", """
            dl.add(dl.var.ok)
            dl.add(dl.var.cut)
            dl.on("finished", function(d, f)
              if d.url == dl.var.ok then local t = nil; return t.x end
            end)
            """)
        let run = try await job.run("herr.lua", out: out, [
            "--var", "ok=\(server.url("/files/h.txt"))", "--var", "cut=\(server.url("/files/cut.bin?truncate=40000"))",
            "--retries", "0",
        ])
        #expect(run.status == 1, "\(run.stderr)")
        let text = try await DLPipeRun.run(["status", out])
        #expect(!text.stdout.contains("\\u{"), "no escapes: \(text.stdout)")
        let lines = text.stdout.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("      ") && $0.hasSuffix("herr.lua:4: in local 'handler'") },
                "the traceback's lines, indented: \(text.stdout)")
        #expect(lines.contains { $0.contains("cut.bin?truncate=40000: network: ") && $0.hasSuffix(" (attempts: 1, 39.1 KiB kept: the next run resumes)") },
                "\(text.stdout)")
    }

    /// `running_pid` and each run's `status`, newest run first.
    private func runs(_ out: String) async throws -> (pid: Int?, statuses: [String]) {
        let status = try await DLPipeRun.run(["status", out, "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        let runs = object?["runs"] as? [[String: Any]] ?? []
        return (object?["running_pid"] as? Int, runs.compactMap { $0["status"] as? String })
    }
}
