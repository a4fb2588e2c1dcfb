import Foundation
import Testing
import TestSupport

/// `--verify` in a shared queue's worker: the state (validators, the
/// SHA-256) is the queue's in PostgreSQL, and the check is the same as
/// without one: a good file kept on a 304, a rotted one fetched without
/// validators and replaced.
@Suite struct VerifyQueueTests {
    @Test func aWorkerChecksAndRepairsAsARunAloneDoes() async throws {
        let server = try FaultServer()
        let data = try server.put("f.bin", randomBytes: 40_000, seed: 5)
        let out = try TempDir.make("verify-queue")
        let database = try PostgresCluster.shared().freshDatabase("verify")
        let job = try LuaJob()
        try job.write("job.lua", "dl.config{ verify = true }\ndl.add(\"\(server.url("/files/f.bin"))\")\n")
        func run() async throws -> DLPipeRun {
            try await job.run("job.lua", out: out, ["--no-hooks", "--queue", database, "--name", "verify", "--settle", "0"])
        }
        func lastHeaders() throws -> [String: String] {
            try server.requests(matching: "/files/f.bin").last?["headers"] as? [String: String] ?? [:]
        }
        let first = try await run()
        try #require(first.status == 0, "\(first.stderr)")
        let good = try await run()
        #expect(good.status == 0, "\(good.stderr)")
        #expect(try lastHeaders()["if-none-match"] != nil)
        #expect(good.events("finished").first?["checked"] as? String == "validators and content", "\(good.stdout)")

        let path = out + "/f.bin"
        let time = try #require(FileTimes.modified(path))
        var rotted = data
        rotted[123] ^= 0x40
        try Data(rotted).write(to: URL(fileURLWithPath: path))
        try FileTimes.set(path, seconds: Int(time.tv_sec), nanoseconds: Int(time.tv_nsec))
        let repaired = try await run()
        #expect(repaired.status == 0, "\(repaired.stderr)")
        #expect(try lastHeaders()["if-none-match"] == nil, "unconditional")
        #expect(sameBytes(path, data) && listing(out) == ["f.bin"], "\(listing(out))")
        #expect(repaired.events("finished").first?["unchanged"] as? Bool == false)
        #expect(repaired.events("warning").contains { ($0["message"] as? String)?.hasPrefix("f.bin did not match") == true }, "\(repaired.stdout)")
    }
}
