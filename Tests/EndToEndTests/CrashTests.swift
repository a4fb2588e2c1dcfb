import Foundation
import TestSupport
import Testing

/// kill -9 at random points, many times in a row, then a run to the end: every
/// file byte-identical, no part files, the state agrees with the disk, and the
/// server saw range requests rather than whole re-downloads.
@Suite struct CrashTests {
    @Test func repeatedKillsThenACleanRun() async throws {
        let server = try FaultServer()
        let out = try TempDir.make("crash")
        let seed = UInt64(ProcessInfo.processInfo.environment["DLPIPE_CRASH_SEED"] ?? "") ?? UInt64.random(in: 1...1_000_000)
        var random = SplitMix64(seed: seed)
        var files: [String: [UInt8]] = [:]
        // Eight downloads at once (one host, so --per-host 8 as well), killed twelve times.
        for index in 1...8 {
            files["f\(index).bin"] = try server.put("f\(index).bin", randomBytes: 3_000_000, seed: UInt64(index))
        }
        // Throttled so that a whole run reports many more progress events than
        // the kill waits for (at 6 MB/s a first run could end before its kill,
        // and then no later run had anything left to be killed in).
        let urls = files.keys.sorted().map { server.url("/files/\($0)?throttle=2000000") }
        var kills = 0
        let parallel = ["-j", "8", "--per-host", "8"]
        for _ in 1...12 {
            let process = try Subprocess(Paths.binary, ["get"] + urls + ["-d", out, "--json"] + parallel)
            // Kill after a random number of progress events: a random point of the
            // transfers, found by events rather than by sleeping (eight transfers
            // report eight times as often).
            let target = Int(random.next() % 16) + 1
            let status = await offThePool { () -> Int32 in
                var seen = 0
                while seen < target, let line = process.readStdoutLine() {
                    if line.contains("\"progress\"") { seen += 1 }
                }
                process.signal(SIGKILL)
                return process.waitForExit()
            }
            if status == 128 + SIGKILL { kills += 1 }
        }
        let final = try await DLPipeRun.run(["get"] + urls + ["-d", out, "--json"] + parallel)
        #expect(final.status == 0, "seed \(seed): \(final.stderr)")
        for (name, data) in files {
            #expect(sameBytes(out + "/" + name, data), "seed \(seed): \(name) differs")
        }
        #expect(listing(out) == files.keys.sorted(), "seed \(seed): no part files, no name.1 copies")
        let status = try await DLPipeRun.run(["status", out, "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        #expect(object?["finished"] as? Int == files.count, "seed \(seed): the state agrees with the disk")
        #expect(object?["partial"] as? Int == 0, "seed \(seed)")
        let ranges = try server.requests(matching: "/files/").compactMap { ($0["headers"] as? [String: String])?["range"] }
        // A run that was never killed tested nothing: the kills land on progress
        // events, so the first runs at least are cut short mid-body.
        #expect(kills > 0, "seed \(seed): no run was killed")
        #expect(!ranges.isEmpty, "seed \(seed): resumed with Range after \(kills) kills")
    }

    /// The same for many small files, which reach the disk as held bodies
    /// (unnamed files, linked after a batch's syncfs): killed at random points of
    /// the run, a file is absent, whole under its name, or a part file to
    /// resume; never a numbered copy; and a clean run completes the rest.
    @Test func killsAmongSmallFilesLeaveOnlyWholeFiles() async throws {
        let server = try FaultServer()
        let out = try TempDir.make("crash-small")
        let seed = UInt64(ProcessInfo.processInfo.environment["DLPIPE_CRASH_SEED"] ?? "") ?? UInt64.random(in: 1...1_000_000)
        var random = SplitMix64(seed: seed)
        var files: [String: [UInt8]] = [:]
        for index in 1...150 {
            files["s\(index).bin"] = try server.put("s\(index).bin", randomBytes: 1000 + Int(random.next() % 40_000), seed: UInt64(index))
        }
        let urls = files.keys.sorted().map { server.url("/files/\($0)") }
        let parallel = ["-j", "16", "--per-host", "16"]
        for _ in 1...6 {
            let process = try Subprocess(Paths.binary, ["get"] + urls + ["-d", out, "--json"] + parallel)
            // Kill after a random number of events (queued, response, finished...).
            let target = Int(random.next() % 300) + 1
            await offThePool {
                var seen = 0
                while seen < target, process.readStdoutLine() != nil { seen += 1 }
                process.signal(SIGKILL)
                process.waitForExit()
            }
            // Part files may stay (a body that did not arrive whole), to be resumed.
            for name in listing(out) where !(name.hasSuffix(".part") && files[String(name.dropLast(5))] != nil) {
                #expect(files[name] != nil, "seed \(seed): \(name) is not a file of the job (after \(target) events)")
                if let data = files[name] { #expect(sameBytes(out + "/" + name, data), "seed \(seed): \(name) is not whole") }
            }
        }
        let final = try await DLPipeRun.run(["get"] + urls + ["-d", out, "--json"] + parallel)
        #expect(final.status == 0, "seed \(seed): \(final.stderr)")
        #expect(listing(out) == files.keys.sorted(), "seed \(seed): no part files, no name.1 copies")
        for (name, data) in files {
            #expect(sameBytes(out + "/" + name, data), "seed \(seed): \(name) differs")
        }
    }
}
