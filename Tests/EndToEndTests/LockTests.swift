import Foundation
import Testing

/// One run at a time per output directory (exit 3), --wait-lock, stale locks.
@Suite struct LockTests {
    let server: FaultServer
    let out: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("lock")
        try server.put("big.bin", randomBytes: 200_000)
        try server.put("small.txt", bytes: Array("small".utf8))
    }

    /// A run that holds the lock: it is stalled mid-body until signalled. Its
    /// timeout outlasts the test on a loaded machine: the default 30 s would end
    /// the stall with a resume that finishes the file before the signal.
    private func holder() async throws -> Subprocess {
        let process = try Subprocess(Paths.binary, ["get", server.url("/files/big.bin?stall=50000"), "-d", out, "--json", "--timeout", "300"])
        #expect(await offThePool { process.waitForLine(containing: "\"progress\"") }, "no progress event")
        return process
    }

    @Test func aSecondRunExitsThreeNamingTheHolder() async throws {
        let first = try await holder()
        let second = try await DLPipeRun.run(["get", server.url("/files/small.txt"), "-d", out])
        #expect(second.status == 3, "\(second.stderr)")
        #expect(second.stderr.contains("process \(first.pid)"), "\(second.stderr)")
        #expect(second.stderr.split(separator: "\n").count == 1)
        #expect(try server.requests(matching: "/files/small.txt").isEmpty, "no request was made")
        first.signal(SIGTERM)
        #expect(await offThePool { first.waitForExit() } == 130)
    }

    @Test func waitLockWaitsForTheHolder() async throws {
        let first = try await holder()
        let waiting = try Subprocess(Paths.binary, ["get", server.url("/files/small.txt"), "-d", out, "--wait-lock", "--json"])
        // The waiter has made no request while the holder runs; end the holder.
        #expect(try server.requests(matching: "/files/small.txt").isEmpty)
        first.signal(SIGINT)
        #expect(await offThePool { first.waitForExit() } == 130)
        let result = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: waiting.finish()) }
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(sameBytes(out + "/small.txt", Array("small".utf8)))
    }

    @Test func aLockLeftByADeadProcessIsNoLock() async throws {
        try FileManager.default.createDirectory(atPath: out + "/.dlpipe", withIntermediateDirectories: true)
        try "999999\n".write(toFile: out + "/.dlpipe/lock", atomically: true, encoding: .utf8)
        let run = try await DLPipeRun.run(["get", server.url("/files/small.txt"), "-d", out])
        #expect(run.status == 0, "\(run.stderr)")
        let killed = try await holder()
        killed.signal(SIGKILL)
        #expect(await offThePool { killed.waitForExit() } == 128 + SIGKILL)
        let after = try await DLPipeRun.run(["get", server.url("/files/small.txt"), "-d", out])
        #expect(after.status == 0, "after kill -9 the lock is free: \(after.stderr)")
    }

    @Test func aSharedStateFileIsLockedToo() async throws {
        let shared = try TempDir.make("shared") + "/jobs.db"
        let first = try Subprocess(Paths.binary, ["get", server.url("/files/big.bin?stall=50000"), "-d", out, "--state", shared, "--json", "--timeout", "300"])
        #expect(await offThePool { first.waitForLine(containing: "\"progress\"") }, "no progress event")
        let other = try TempDir.make("other")
        let second = try await DLPipeRun.run(["get", server.url("/files/small.txt"), "-d", other, "--state", shared])
        #expect(second.status == 3, "\(second.stderr)")
        first.signal(SIGTERM)
        #expect(await offThePool { first.waitForExit() } == 130)
        #expect(FileManager.default.fileExists(atPath: shared), "the state went to --state FILE")
        #expect(!FileManager.default.fileExists(atPath: out + "/.dlpipe/state.db"))
    }
}
