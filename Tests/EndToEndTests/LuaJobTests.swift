import Foundation
import Testing

/// `dlpipe run` and `dlpipe check`: the dl API and the events, with real Lua.
@Suite struct LuaJobTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "run")
        try server.put("a.txt", bytes: Array("alpha".utf8))
        try server.put("b.bin", randomBytes: 50_000)
        try server.put("page.html", bytes: Array("<a href=\"a.txt\">a</a> <a href=\"b.bin\">b</a>".utf8))
    }

    @Test func eventsArriveInOrderWithTheirArguments() async throws {
        try job.write("job.lua", """
            local base = dl.var.base
            dl.add(base .. "/a.txt")
            dl.on("response", function(d, r)
              dl.log("response", d.id, d.name, r.status, r.type, r.length, r.filename, r.headers["content-length"])
            end)
            dl.on("finished", function(d, f)
              dl.log("finished", d.id, f.bytes, f.type, f.unchanged, #f.sha256, dl.read(f.path))
            end)
            dl.on("done", function(s) dl.log("done", s.finished, s.failed, s.skipped) end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stderr.split(separator: "\n").filter { $0.hasPrefix("[") }
        try #require(lines.count == 3, "\(run.stderr)")
        #expect(lines[0].hasSuffix("response\t1\ta.txt\t200\ttext/plain\t5\ta.txt\t5"))
        #expect(lines[1].hasSuffix("finished\t1\t5\ttext/plain\tfalse\t64\talpha"))
        #expect(lines[2].hasSuffix("done\t1\t0\t0"))
        #expect(lines[0].contains("job.lua:4 #1]"), "attributed to the script line and download")
    }

    @Test func chainingFromFinishedSetsTheParent() async throws {
        try job.write("job.lua", """
            local page = dl.add(dl.var.base .. "/page.html")
            dl.on("finished", function(d, f)
              if d.id ~= page then return end
              for href in dl.read(f.path):gmatch('href="([^"]+)"') do
                dl.add(dl.url.resolve(d.url, href))
                dl.add(dl.url.resolve(d.url, href))  -- a repeat is queued once
              end
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(listing(out) == ["a.txt", "b.bin", "page.html"])
        #expect(run.events("queued").compactMap { $0["parent"] as? Int } == [1, 1])
        #expect(try server.requests(matching: "/files/a.txt").count == 1)
    }

    /// While the response hook decides, the first 256 KiB of a body wait in
    /// memory and the rest waits in curl: small and large bodies, renamed or
    /// skipped, arrive whole or not at all.
    @Test func bodiesHeldForTheResponseHookArriveWhole() async throws {
        let small = try server.put("small.bin", randomBytes: 5_000, seed: 1)
        let large = try server.put("large.bin", randomBytes: 3_000_000, seed: 2)
        try server.put("skip.bin", randomBytes: 2_000_000, seed: 3)
        try job.write("held.lua", """
            for _, name in ipairs({ "small.bin", "large.bin", "skip.bin" }) do dl.add(dl.var.base .. "/" .. name) end
            dl.on("response", function(d, r)
              if d.name == "skip.bin" then return dl.skip("not wanted") end
              d.name = "kept-" .. r.filename
            end)
            """)
        let run = try await job.run("held.lua", out: out, ["--var", "base=\(server.url("/files"))", "-j", "3"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/kept-small.bin", small))
        #expect(sameBytes(out + "/kept-large.bin", large))
        #expect(listing(out) == ["kept-large.bin", "kept-small.bin"], "nothing of the skipped body is written")
    }

    @Test func responseRenamesAndFirstSkipWinsAcrossScripts() async throws {
        try job.write("job.lua", """
            dl.add(dl.var.base .. "/a.txt")
            dl.add(dl.var.base .. "/b.bin")
            dl.on("response", function(d, r)
              if r.type == "text/plain" then d.name = "renamed.txt"; d.dir = "texts" end
            end)
            """)
        try job.write("hooks.d/20-skip.lua", """
            dl.on("response", function(d, r)
              if r.type ~= "text/plain" then return dl.skip("second hook") end
            end)
            """)
        try job.write("hooks.d/10-skip.lua", """
            dl.on("response", function(d, r)
              if r.type ~= "text/plain" then return dl.skip("first hook") end
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "skips are not failures: \(run.stderr)")
        #expect(sameBytes(out + "/texts/renamed.txt", Array("alpha".utf8)))
        #expect(run.events("skipped").compactMap { $0["reason"] as? String } == ["first hook"])
        #expect(listing(out) == ["texts"])
        let noHooks = try await job.run("job.lua", out: try TempDir.make("nohooks"), ["--var", "base=\(server.url("/files"))", "--no-hooks"])
        #expect(noHooks.events("skipped").isEmpty, "--no-hooks leaves hooks.d/ out")
    }

    @Test func finishedMovesAndHookGlobalsStayApart() async throws {
        try job.write("job.lua", """
            counter = "job"
            dl.add(dl.var.base .. "/a.txt")
            dl.on("finished", function(d, f) d.dir = "moved/" .. counter end)
            """)
        try job.write("hooks.d/a.lua", "counter = 'hook'\ndl.on('finished', function(d) dl.log('hook sees', d.dir) end)\n")
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/moved/job/a.txt", Array("alpha".utf8)), "the hook's global did not leak into the job")
        #expect(run.logLines(containing: "hook sees\tmoved/job").count == 1)
    }

    @Test func failedHandlerRetriesAndDoneSetsTheExitCode() async throws {
        try job.write("job.lua", """
            dl.config{ retries = 0 }
            dl.add(dl.var.base .. "/a.txt?status=500&fail_times=1")
            dl.add(dl.var.base .. "/none.txt")
            dl.on("failed", function(d, e)
              dl.log("failed", e.kind, e.status, e.attempt)
              if e.status == 500 then return dl.retry(0.05) end
              return false
            end)
            dl.on("done", function(s)
              if s.failed == 1 then return 7 end
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 7, "\(run.stderr)")
        #expect(sameBytes(out + "/a.txt", Array("alpha".utf8)))
        #expect(run.logLines(containing: "failed\thttp\t500\t1").count == 1)
        #expect(run.logLines(containing: "failed\thttp\t404\t1").count == 1)
    }

    @Test func doneMayAddMoreWork() async throws {
        try job.write("job.lua", """
            local rounds = 0
            dl.on("done", function(s)
              rounds = rounds + 1
              if rounds == 1 then dl.add(dl.var.base .. "/a.txt") end
              if rounds == 2 then dl.log("second done, finished", s.finished) end
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(listing(out) == ["a.txt"])
        #expect(run.logLines(containing: "second done, finished\t1").count == 1)
    }

    @Test func commandLineOverridesConfig() async throws {
        try job.write("job.lua", "dl.config{ dir = 'from-config' }\ndl.add(dl.var.base .. '/a.txt')\n")
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(listing(out) == ["a.txt"], "-d wins over dl.config{dir}")
    }

    @Test func getRunsAdHocDownloadsThroughAHook() async throws {
        let hook = try job.write("rename.lua", "dl.on('response', function(d, r) d.name = 'via-hook-' .. r.filename end)\n")
        let run = try await DLPipeRun.run(["get", server.url("/files/a.txt"), "--hook", hook, "-d", out])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(listing(out) == ["via-hook-a.txt"])
    }

    @Test func checkReportsProblemsAsFileLineMessage() async throws {
        let cases: [(String, String)] = [
            ("dl.add('http://x/'\n", "job.lua:2:"),
            ("\n\ndl.on('finish', function() end)\n", "job.lua:3: unknown event 'finish'"),
            ("dl.config{ speed = 3 }\n", "job.lua:1: unknown config key 'speed'"),
            ("\nlocal skip = dl.skip('x')\n", "job.lua:2: dl.skip may not be called in the top level"),
            ("\nreturn dl.skip('x')\n", "job.lua: dl.skip may not be called in the top level"),
            ("dl.config{ concurrency = 0 }\n", "concurrency wants a whole number"),
        ]
        for (source, expected) in cases {
            try job.write("job.lua", source)
            let run = try await DLPipeRun.run(["check", job.directory + "/job.lua", "--no-hooks"])
            #expect(run.status == 2, "\(source)")
            #expect(run.stderr.contains(expected), "\(source): \(run.stderr)")
        }
        try job.write("job.lua", "dl.add('http://127.0.0.1:1/x')\ndl.on('finished', function() end)\ndl.store.set('n', (dl.store.get('n') or 0) + 1)\n")
        let ok = try await DLPipeRun.run(["check", job.directory + "/job.lua", "--no-hooks", "-d", out])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out + "/.dlpipe/state.db"), "check writes no state")
        #expect(ok.stdout.contains("1 download(s) queued; handlers: finished 1"))
    }

    /// A bad dl.config value is a load error at the line of the call, like any
    /// other: exit 2, `job.lua:N: message`, and no request.
    @Test(arguments: [
        ("refresh = \"sometimes\"", "dl.config: refresh wants \"conditional\", \"never\" or \"always\""),
        ("concurrency = 0", "dl.config: concurrency wants a whole number from 1 to 1000"),
        ("per_host = 2.5", "dl.config: per_host wants a whole number"),
        ("retries = 101", "dl.config: retries wants a whole number from 0 to 100"),
        ("timeout = -1", "dl.config: timeout wants a number of seconds above 0, at most 86400, not -1"),
        ("budget = 0", "dl.config: budget wants a number of seconds above 0, at most 86400, not 0"),
        ("budget = 1e300", "dl.config: budget wants a number of seconds above 0, at most 86400, not 1e+300"),
        ("retries = 1e300", "dl.config: retries wants a whole number from 0 to 100, not 1e+300"),
        ("concurrency = -1e300", "dl.config: concurrency wants a whole number from 1 to 1000, not -1e+300"),
        ("max_depth = 2^63", "dl.config: max_depth wants a whole number from 0 to 1000000, not 9.2233720368548e+18"),
        ("max_redirs = 0/0", "dl.config: max_redirs wants a whole number from 0 to 1000, not nan"),
        ("max_downloads = 0", "dl.config: max_downloads wants a whole number"),
        ("rate = \"fast\"", "dl.config: rate wants bytes per second"),
        ("rate = true", "dl.config: rate wants bytes per second"),
        ("dir = 3", "config key 'dir' wants a string, not a number"),
    ])
    func aBadConfigValueNamesFileAndLine(_ setting: String, _ message: String) async throws {
        let path = try job.write("job.lua", "dl.add(dl.var.base .. '/a.txt')\n\ndl.config{ \(setting) }\n")
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 2, "\(setting): \(run.stderr)")
        #expect(run.stderr.hasPrefix("\(path):3: \(message)"), "\(setting): \(run.stderr)")
        #expect(try server.requests(matching: "/files/").isEmpty)
        let check = try await DLPipeRun.run(["check", path, "--no-hooks", "--var", "base=http://127.0.0.1:1"])
        #expect(check.status == 2 && check.stderr.hasPrefix("\(path):3: \(message)"), "\(check.stderr)")
    }

    @Test func aJobThatFailsToLoadMakesNoRequest() async throws {
        try job.write("job.lua", "dl.add(dl.var.base .. '/a.txt')\nerror('broken job')\n")
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("job.lua:2: broken job"))
        #expect(try server.requests(matching: "/files/").isEmpty)
        let hookBroken = try job.write("hooks.d/bad.lua", "this is not lua")
        try job.write("job.lua", "dl.add(dl.var.base .. '/a.txt')\n")
        let second = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(second.status == 2)
        #expect(second.stderr.contains(hookBroken + ":1:"), "\(second.stderr)")
        #expect(try server.requests(matching: "/files/").isEmpty)
    }

    @Test func storeKeepsValuesBetweenRuns() async throws {
        try job.write("job.lua", """
            local n = (dl.store.get("runs") or 0) + 1
            dl.store.set("runs", n)
            local t = dl.store.get("table")
            if t then dl.log("table", t.name, t.list[1], t.list[2], t.list[3], math.type(t.list[3]), t.nested.deep) end
            dl.store.set("table", { name = "cursor", list = { "x", true, 7 }, nested = { deep = 2.5 } })
            local ok, err = pcall(dl.store.set, "bad", function() end)
            dl.log("run", n, ok, err ~= nil)
            dl.add(dl.var.base .. "/a.txt")
            dl.on("finished", function(d, f) dl.store.set("last", d.url) end)
            """)
        let first = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.logLines(containing: "run\t1\tfalse\ttrue").count == 1, "\(first.stderr)")
        let second = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(second.logLines(containing: "run\t2\t").count == 1, "\(second.stderr)")
        #expect(second.logLines(containing: "table\tcursor\tx\ttrue\t7\tinteger\t2.5").count == 1, "\(second.stderr)")
    }

    @Test func pausedFromAHandlerThenResumedFromDone() async throws {
        let data = try server.put("slow.bin", randomBytes: 300_000)
        try job.write("job.lua", """
            local id = dl.add(dl.var.base .. "/slow.bin?stall=100000&stall_times=1&k=" .. dl.var.resume)
            local paused = false
            dl.on("progress", function(d, p)
              if not paused then paused = true; dl.pause(d.id) end
            end)
            dl.on("done", function(s)
              if dl.var.resume == "yes" and s.finished == 0 then dl.resume(id) end
            end)
            """)
        let resumed = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))", "--var", "resume=yes"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(sameBytes(out + "/slow.bin", data))
        #expect(resumed.events("paused").count == 1)
        let other = try TempDir.make("paused")
        let abandoned = try await job.run("job.lua", out: other, ["--var", "base=\(server.url("/files"))", "--var", "resume=no"])
        #expect(abandoned.status == 1, "a pause nobody resumes ends the run: \(abandoned.stderr)")
        #expect(abandoned.events("failed").first?["kind"] as? String == "cancelled")
        #expect(listing(other).isEmpty)
    }

    /// A resume is a new attempt: it asks the download's own URL again and
    /// follows its redirect anew, not the hop it was paused on (a redirect's
    /// target is often a signed URL that expires).
    @Test func aResumeAfterARedirectAsksTheDownloadsOwnURLAgain() async throws {
        let data = try server.put("slow.bin", randomBytes: 300_000)
        try job.write("job.lua", """
            local id = dl.add(dl.var.base .. "/redirect/0/files/slow.bin?stall=100000&stall_times=1&k=hop")
            local paused = false
            dl.on("request", function(d, q) dl.log("asks", q.url:find("/redirect/", 1, true) and "redirect" or "file") end)
            dl.on("progress", function(d, p)
              if not paused then paused = true; dl.pause(d.id) end
            end)
            dl.on("done", function(s) if s.finished == 0 then dl.resume(id) end end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url(""))"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/slow.bin", data))
        #expect(run.events("paused").count == 1)
        let asks = run.logLines(containing: "asks\t").map { $0.split(separator: "\t").last.map(String.init) ?? "" }
        #expect(asks == ["redirect", "file", "redirect", "file"], "\(run.stderr)")
    }

    @Test func renamingToTheSuggestedNameOnEveryAttemptKeepsOneFile() async throws {
        let data = try server.put("big.bin", randomBytes: 400_000)
        try job.write("job.lua", """
            dl.add(dl.var.base .. "/big.bin?truncate=100000&truncate_times=1")
            dl.on("response", function(d, r) d.name = r.filename end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(listing(out) == ["big.bin"], "no big.1.bin, no leaked part file")
        #expect(sameBytes(out + "/big.bin", data))
        let again = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(again.status == 0)
        #expect(listing(out) == ["big.bin"], "a re-run keeps the name")
    }

    @Test func anEmptyBodyHeldByAHookDoesNotDisturbOtherTransfers() async throws {
        try server.put("empty.txt", bytes: [])
        let big = try server.put("big.bin", randomBytes: 300_000)
        // The handler spins 0.3 s of CPU time: a budget of 30 s of run time
        // keeps a loaded machine, which gives it that CPU slowly, from turning
        // the spin into a budget failure.
        try job.write("job.lua", """
            dl.config{ budget = 30 }
            dl.add(dl.var.base .. "/empty.txt")
            dl.on("response", function(d, r)
              if r.filename ~= "empty.txt" then return end
              dl.add(dl.var.base .. "/big.bin")
              local t = os.clock() while os.clock() - t < 0.3 do end
              return dl.skip("held, then skipped")
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))", "--timeout", "10"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/big.bin", big))
        #expect(run.events("skipped").count == 1)
    }
}
