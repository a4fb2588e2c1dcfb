import DLPipe
import Foundation
import Testing
import TestSupport

/// Issue 13: the engine's waiting calls honour the cancellation of the task
/// that waits: they return at once, and the download goes on.
@Suite struct WaitCancellationTests {
    let server: FaultServer
    let out: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("waitcancel")
    }

    @Test func aCancelledOutcomeWaitReturnsNilAndTheDownloadGoesOn() async throws {
        try server.put("stall.bin", randomBytes: 300_000)
        let engine = try DownloadEngine(configuration: EngineConfiguration(directory: out, timeout: 600))
        let id = engine.add(server.url("/files/stall.bin?stall=100000"))
        let waiter = Task { await engine.outcome(of: id) }
        waiter.cancel()
        let answer = try await within(seconds: 10, "a cancelled outcome(of:)") { await waiter.value }
        #expect(answer == nil)
        #expect(engine.pause(id), "still open: the wait's cancellation did not end it")
        // An already cancelled task does not wait either.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await engine.outcome(of: id)
        }
        #expect(try await within(seconds: 10, "outcome(of:) in a cancelled task") { await early.value } == nil)
        await engine.stop()
    }

    @Test func aCancelledDrainWaitReturnsTheCountsSoFar() async throws {
        try server.put("done.bin", randomBytes: 1000)
        try server.put("stall.bin", randomBytes: 300_000, seed: 2)
        let engine = try DownloadEngine(configuration: EngineConfiguration(directory: out, timeout: 600))
        let done = engine.addTask(server.url("/files/done.bin"))
        _ = try await within(seconds: 20, "a small download") { await done.result }
        let stalled = engine.add(server.url("/files/stall.bin?stall=100000"))
        let waiter = Task { await engine.waitUntilDrained() }
        waiter.cancel()
        let counts = try await within(seconds: 10, "a cancelled waitUntilDrained") { await waiter.value }
        #expect(counts.summary.finished == 1)
        #expect(engine.cancel(stalled), "the stalled download was still open")
        #expect(try await within(seconds: 20, "the drain") { await engine.waitUntilDrained() }.summary.cancelled == 1)
        await engine.stop()
    }
}
