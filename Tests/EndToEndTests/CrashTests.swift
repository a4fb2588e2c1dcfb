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
        // Throttled so that a run lasts long enough to be killed in the middle.
        let urls = files.keys.sorted().map { server.url("/files/\($0)?throttle=6000000") }
        var kills = 0
        let parallel = ["-j", "8", "--per-host", "8"]
        for _ in 1...12 {
            let process = try Subprocess(Paths.binary, ["get"] + urls + ["-d", out, "--json"] + parallel)
            // Kill after a random number of progress events: a random point of the
            // transfers, found by events rather than by sleeping (eight transfers
            // report eight times as often).
            let target = Int(random.next() % 24) + 1
            var seen = 0
            while seen < target, let line = process.readStdoutLine() {
                if line.contains("\"progress\"") { seen += 1 }
            }
            process.signal(SIGKILL)
            if process.waitForExit() == 128 + SIGKILL { kills += 1 }
        }
        let final = try await DLPipeRun.run(["get"] + urls + ["-d", out, "--json"] + parallel)
        #expect(final.status == 0, "seed \(seed): \(final.stderr)")
        for (name, data) in files {
            #expect(bytes(at: out + "/" + name) == data, "seed \(seed): \(name) differs")
        }
        #expect(listing(out) == files.keys.sorted(), "seed \(seed): no part files, no name.1 copies")
        let status = try await DLPipeRun.run(["status", out, "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        #expect(object?["finished"] as? Int == files.count, "seed \(seed): the state agrees with the disk")
        #expect(object?["partial"] as? Int == 0, "seed \(seed)")
        let ranges = try server.requests(matching: "/files/").compactMap { ($0["headers"] as? [String: String])?["range"] }
        #expect(kills == 0 || !ranges.isEmpty, "seed \(seed): resumed with Range after \(kills) kills")
    }
}
