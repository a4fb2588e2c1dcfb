import Foundation
import Testing
import TestSupport

/// robots.txt in a shared queue: fetched once per host per run for the whole
/// job, by one worker; the others take its copy from the queue's state.
@Suite struct RobotsQueueTests {
    @Test func twoWorkersOfOneRunAskForRobotsTxtOnce() async throws {
        let server = try FaultServer()
        try server.put("robots.txt", bytes: Array("User-agent: *\nDisallow: /files/private/\n".utf8))
        var urls: [String] = []
        for index in 0..<8 {
            try server.put("f\(index).bin", randomBytes: 2000, seed: UInt64(index + 1))
            urls.append(server.url("/files/f\(index).bin?delay=0.3"))
        }
        try server.put("private/p.bin", randomBytes: 100)
        urls.append(server.url("/files/private/p.bin"))
        let queue = try PostgresCluster.shared().freshDatabase("robots")
        let job = try LuaJob()
        let out = try TempDir.make("robots-queue-out")
        let jobFile = try job.write("job.lua", "dl.config{ robots = true }\n" + urls.map { "dl.add('\($0)')\n" }.joined())
        let workers = try (0..<2).map { _ in
            try Subprocess.queueWorker(
                ["run", jobFile, "-d", out, "--queue", queue, "--name", "robots", "-j", "1", "--per-host", "4", "--settle", "0", "--json"])
        }
        let outputs = await offThePool { workers.map { $0.finish() } }
        for output in outputs { #expect(output.status == 0, "\(output.stderr)") }
        let events = outputs.map { output in
            output.stdout.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
        let finished = events.map { $0.filter { $0["event"] as? String == "finished" }.count }
        let skipped = events.flatMap { $0.filter { $0["event"] as? String == "skipped" } }
        #expect(finished.reduce(0, +) == 8, "\(finished)")
        #expect(finished.allSatisfy { $0 > 0 }, "both workers downloaded: \(finished)")
        #expect(skipped.compactMap { $0["reason"] as? String } == ["robots.txt"], "\(skipped)")
        #expect(try server.requests(matching: "/files/private/").isEmpty)
        #expect(try server.requests(matching: "/robots.txt").count == 1, "once for the whole run")
    }
}
