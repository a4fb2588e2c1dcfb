import DLPipe
@testable import DLPipeQueue
import Foundation
import Synchronization
import Testing
import TestSupport

/// A shared queue's worker answers its engine's `drained` calls through
/// `DrainAnswers`. Here a real engine runs a claimed download from a loopback
/// server, and the test plays the claim loop's part, step by step, in the
/// order that left one worker in ten alive after its run had ended
/// (docs/architecture.md, "A run that does not end"); no database is needed.
@Suite struct QueueDrainAnswerTests {
    @Test func aDrainedCallAskedAgainAfterTheRunEndedGetsTheRunsCodeAtOnce() async throws {
        let server = try FaultServer()
        try server.put("claimed.bin", randomBytes: 3000)
        let out = try TempDir.make("queuedrain")
        let claims = TestQueue(folder: ".dlpipe/queue/1", worker: 1)
        try FileManager.default.createDirectory(
            atPath: out + "/" + claims.files.folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let answers = DrainAnswers()
        let calls = Atomic<Int>(0)
        let asked = DispatchSemaphore(value: 0)
        var hooks = DownloadHooks()
        hooks.drained = { _, reply in
            calls.add(1, ordering: .relaxed)
            _ = answers.ask(reply)
            asked.signal()
        }
        var configuration = EngineConfiguration()
        configuration.directory = out
        configuration.hookDeadline = nil  // as the command line runs a worker
        configuration.queue = claims
        let engine = try DownloadEngine(
            configuration: configuration, root: DownloadEngine.outputRoot(out), hooks: hooks, state: nil)
        let drained = Task { await engine.waitUntilDrained() }

        // The engine has nothing open and asks; the worker keeps the call.
        try await offThePool(seconds: 20, "the first drained call") { asked.wait() }
        #expect(answers.isAsked)
        // A claim reaches the engine while that call waits (in the runs that
        // hung, it sat in the engine's inbox when the engine asked), and ends.
        engine.addClaimed([ClaimedRequest(number: 41, request: DownloadRequest(url: server.url("/files/claimed.bin")))])
        let id = try #require(engine.downloadID(number: 41))
        let outcome = try await within(seconds: 20, "the claimed download") { await engine.outcome(of: id) }
        guard case .finished(let result)? = outcome else {
            Issue.record("expected the claimed download to finish, got \(String(describing: outcome))")
            return
        }
        #expect(result.bytes == 3000)
        // The job's run ended: the waiting call gets its code. The claim
        // opened a new drain in the engine, so it asks once more, and that
        // call must get the run's code too, at once: nobody is left to answer it.
        answers.answer(3)
        let (summary, exitCode) = try await within(seconds: 20, "waitUntilDrained after the run's end") {
            await drained.value
        }
        #expect(exitCode == 3)
        #expect(summary.finished == 1)
        #expect(calls.load(ordering: .relaxed) == 2)
        #expect(!answers.isAsked)
        #expect(FileManager.default.fileExists(atPath: out + "/claimed.bin"))
        await engine.stop()
    }

    @Test func aClaimAnswerLeavesTheNextCallWaitingAndKeepsNoCode() {
        let answers = DrainAnswers()
        let replies = Mutex<[Int?]>([])
        #expect(!answers.ask { code in replies.withLock { $0.append(code) } })
        answers.answer(nil)  // more claims went to the engine
        #expect(replies.withLock { $0 } == [nil])
        // The next call waits for the claim loop again: nil is not a final answer.
        #expect(!answers.ask { code in replies.withLock { $0.append(code) } })
        #expect(answers.isAsked)
        answers.answer(0)
        #expect(replies.withLock { $0 } == [nil, 0])
        // A code given while nobody asks is kept for the next call.
        let late = DrainAnswers()
        late.answer(1)
        #expect(late.ask { code in replies.withLock { $0.append(code) } })
        #expect(replies.withLock { $0 } == [nil, 0, 1])
    }
}
