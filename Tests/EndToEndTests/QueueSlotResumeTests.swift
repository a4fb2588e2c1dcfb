import DLPipe
import Foundation
import Synchronization
import Testing
import TestSupport

/// A shared queue's download gives its host slot back when its transfer
/// ends (`QueueParticipant.transferEnded`); one paused in its transfer and
/// resumed would transfer again without a slot, so the engine hands it back
/// to the queue instead. A real engine and a loopback server; the test
/// plays the worker's part, so no database is needed.
@Suite struct QueueSlotResumeTests {
    @Test func aDownloadResumedAfterItsTransferEndedGoesBackToTheQueue() async throws {
        let server = try FaultServer()
        try server.put("slow.bin", randomBytes: 1_000_000)
        let out = try TempDir.make("queueslot-resume")
        let ended = Mutex<[Int]>([])
        let handedBack = Mutex<[(number: Int, delay: Double, error: DownloadError?)]>([])
        let back = DispatchSemaphore(value: 0)
        let claims = TestQueue(
            folder: ".dlpipe/queue/1", worker: 1,
            handBack: { number, delay, error in
                handedBack.withLock { $0.append((number, delay, error)) }
                back.signal()
            },
            transferEnded: { number in ended.withLock { $0.append(number) } })
        try FileManager.default.createDirectory(
            atPath: out + "/" + claims.files.folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var configuration = EngineConfiguration()
        configuration.directory = out
        configuration.queue = claims
        let engine = try DownloadEngine(
            configuration: configuration, root: DownloadEngine.outputRoot(out), hooks: nil, state: nil)
        let receiving = DispatchSemaphore(value: 0)
        let paused = DispatchSemaphore(value: 0)
        engine.observe { event in
            if case .response = event { receiving.signal() }
            if case .paused = event { paused.signal() }
        }
        // 1 MB at 2 KB/s: its transfer would last 500 s (the test stops it
        // long before), so it is surely paused in it, however late a loaded
        // machine delivers the response's event (at 10 KB/s, 100 s, a full
        // suite on two cores resumed the test after the transfer had ended).
        engine.addClaimed([ClaimedRequest(number: 7, request: DownloadRequest(url: server.url("/files/slow.bin?throttle=2000")))])
        let id = try #require(engine.downloadID(number: 7))
        try await offThePool(seconds: 20, "the transfer's response") { receiving.wait() }
        guard engine.pause(id) else {
            let outcome = try await within(seconds: 5, "the outcome") { await engine.outcome(of: id) }
            let given = handedBack.withLock { $0.map { "\($0.number) after \($0.delay) s: \(String(describing: $0.error))" } }
            Issue.record("the download was not open to pause: outcome \(String(describing: outcome)), handed back \(given)")
            await engine.stop()
            return
        }
        try await offThePool(seconds: 20, "the pause") { paused.wait() }
        // The paused transfer ended: its slot goes back, once.
        #expect(ended.withLock { $0 } == [7])
        #expect(handedBack.withLock { $0.isEmpty })

        // Resumed, it would transfer again: it goes back to the queue, ready
        // now and without an error, and leaves this engine.
        #expect(engine.resume(id))
        try await offThePool(seconds: 20, "the hand-back to the queue") { back.wait() }
        let given = handedBack.withLock { $0 }
        #expect(given.count == 1)
        #expect(given.first?.number == 7 && given.first?.delay == 0 && given.first?.error == nil)
        #expect(ended.withLock { $0 } == [7])
        // Nothing was requested again by this engine.
        #expect(try server.requests(matching: "/files/slow.bin").count == 1)
        await engine.stop()
    }
}
