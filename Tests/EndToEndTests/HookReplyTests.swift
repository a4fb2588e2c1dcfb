import DLPipe
import Foundation
import Synchronization
import Testing
import TestSupport

/// Issue 13, item 4: a hook replies exactly once, within the hook deadline.
/// A second reply is ignored and counted; a reply that never comes fails the
/// download with kind `hook`. Every wait is bounded: a hang fails in seconds.
@Suite struct HookReplyTests {
    let server: FaultServer
    let out: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("hookreply")
    }

    private func engine(hooks: DownloadHooks, deadline: Double? = 2) throws -> DownloadEngine {
        var configuration = EngineConfiguration()
        configuration.directory = out
        configuration.hookDeadline = deadline
        configuration.backoffBase = 0.01
        return try DownloadEngine(configuration: configuration, hooks: hooks)
    }

    private func drain(_ engine: DownloadEngine, seconds: Double = 20) async throws -> RunSummary {
        try await within(seconds: seconds, "waitUntilDrained") { await engine.waitUntilDrained().summary }
    }

    @Test func aSecondReplyIsIgnoredAndCountedAndTheDrainStillComes() async throws {
        try server.put("one.bin", randomBytes: 2000)
        try server.put("two.bin", randomBytes: 3000, seed: 2)
        let hooks = DownloadHooks(
            response: { _, _, reply in
                reply(.proceed())
                reply(.skip(reason: "a second answer"))
            },
            finished: { _, _, reply in
                DispatchQueue.global().async {
                    reply(.keep())
                    reply(.fail(DownloadError(.hook, "a second answer")))
                }
            })
        let engine = try engine(hooks: hooks)
        let one = engine.addTask(server.url("/files/one.bin"))
        let two = engine.addTask(server.url("/files/two.bin"))
        let summary = try await drain(engine)
        #expect(summary.finished == 2)
        #expect(summary.skipped == 0 && summary.failed == 0)
        // The first reply won: both files are there with their bytes.
        #expect(try await one.value.bytes == 2000)
        #expect(try await two.value.bytes == 3000)
        #expect(engine.ignoredHookReplies == 4)
        // A second drain answers too: the pending count did not go wrong.
        engine.add(server.url("/files/one.bin?again=1"))
        #expect(try await drain(engine).finished == 3)
        await engine.stop()
    }

    @Test func aDrainedHookThatRepliesTwiceDoesNotHangTheNextDrain() async throws {
        try server.put("d.bin", randomBytes: 500)
        let calls = Atomic<Int>(0)
        let hooks = DownloadHooks(drained: { _, reply in
            calls.add(1, ordering: .relaxed)
            reply(nil)
            reply(7)
        })
        let engine = try engine(hooks: hooks)
        engine.add(server.url("/files/d.bin"))
        _ = try await drain(engine)
        engine.add(server.url("/files/d.bin?second=1"))
        let second = try await within(seconds: 20, "the second drain") { await engine.waitUntilDrained() }
        #expect(second.summary.finished == 2)
        #expect(second.exitCode == nil)  // the ignored 7 set nothing
        #expect(calls.load(ordering: .relaxed) == 2)
        #expect(engine.ignoredHookReplies == 2)
        await engine.stop()
    }

    @Test func aResponseHookThatNeverRepliesFailsItsDownloadAtTheDeadline() async throws {
        try server.put("never.bin", randomBytes: 4000)
        let kept = Mutex<[@Sendable (ResponseVerdict) -> Void]>([])
        let hooks = DownloadHooks(response: { _, _, reply in kept.withLock { $0.append(reply) } })
        let engine = try engine(hooks: hooks, deadline: 0.3)
        let started = Date()
        let task = engine.addTask(server.url("/files/never.bin"))
        let outcome = try await within(seconds: 20, "the result of a download whose hook never replies") {
            await task.result
        }
        guard case .failed(let error) = outcome else {
            Issue.record("expected a hook failure, got \(outcome)")
            return
        }
        #expect(error.kind == .hook)
        #expect(error.message.contains("response hook did not reply within 0.3 s"))
        #expect(Date().timeIntervalSince(started) >= 0.3)
        // Nothing was written, and a reply that comes now changes nothing.
        #expect(!FileManager.default.fileExists(atPath: out + "/never.bin"))
        for reply in kept.withLock({ $0 }) { reply(.proceed()) }
        #expect(try await drain(engine).failed == 1)
        #expect(engine.ignoredHookReplies == 1)
        await engine.stop()
    }

    @Test func finishedRetryingAndFailedHooksThatNeverReplyFailWithKindHook() async throws {
        try server.put("kept.bin", randomBytes: 1000)
        let hooks = DownloadHooks(
            finished: { _, _, _ in },
            retrying: { _, _, _, _ in },
            failed: { _, _, _ in })
        let engine = try engine(hooks: hooks, deadline: 0.2)
        let finished = engine.addTask(server.url("/files/kept.bin"))
        let retried = engine.addTask(server.url("/files/x.bin?status=503"))
        let failed = engine.addTask(server.url("/files/x.bin?status=404"))
        for (name, task) in [("finished", finished), ("retrying", retried), ("failed", failed)] {
            let outcome = try await within(seconds: 20, "the \(name) hook's download") { await task.result }
            guard case .failed(let error) = outcome else {
                Issue.record("\(name): expected a hook failure, got \(outcome)")
                continue
            }
            #expect(error.kind == .hook, "\(name)")
            #expect(error.message.contains("the \(name) hook did not reply"), "\(name): \(error.message)")
        }
        #expect(try await drain(engine).failed == 3)
        await engine.stop()
    }

    @Test func withoutADeadlineASlowReplyIsWaitedFor() async throws {
        try server.put("slow.bin", randomBytes: 1000)
        let hooks = DownloadHooks(response: { _, _, reply in
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(400)) { reply(.proceed()) }
        })
        let engine = try engine(hooks: hooks, deadline: nil)
        let task = engine.addTask(server.url("/files/slow.bin"))
        let file = try await within(seconds: 20, "a download with a slow hook") { try? await task.value }
        #expect(file?.bytes == 1000)
        #expect(engine.ignoredHookReplies == 0)
        await engine.stop()
    }

    /// An actor implements hooks without `nonisolated`: closures hop onto it.
    actor TypeGate {
        private(set) var seen: [String] = []
        func decide(_ response: ResponseInfo) -> ResponseVerdict {
            seen.append(response.type)
            return response.type == "image/png" ? .proceed() : .skip(reason: "not a png")
        }
    }

    @Test func anActorAnswersThroughClosures() async throws {
        try server.put("pic.png", randomBytes: 3000)
        try server.put("page.html", randomBytes: 100, seed: 3)
        let gate = TypeGate()
        let hooks = DownloadHooks(response: { _, response, reply in Task { reply(await gate.decide(response)) } })
        // No deadline: this test is about the actor, and in the full suite a
        // Task's first turn on the concurrency pool can wait longer than 2 s
        // (synchronous tests hold its two threads), which failed the png with
        // "the response hook did not reply within 2 s".
        let engine = try engine(hooks: hooks, deadline: nil)
        let png = engine.addTask(server.url("/files/pic.png"))
        let html = engine.addTask(server.url("/files/page.html"))
        #expect(try await within(seconds: 20, "the png") { try? await png.value }?.bytes == 3000)
        let skipped = try await within(seconds: 20, "the html") { await html.result }
        #expect(skipped == .skipped("not a png"))
        #expect(await gate.seen.sorted() == ["image/png", "text/html"])
        await engine.stop()
    }

    @Test func aProgressClosureAloneIsCalledForEveryProgressEvent() async throws {
        try server.put("slow.bin", randomBytes: 400_000)
        let calls = Atomic<Int>(0)
        let events = Atomic<Int>(0)
        var configuration = EngineConfiguration(directory: out, progressInterval: 0.02)
        configuration.hookDeadline = 2
        let engine = try DownloadEngine(
            configuration: configuration,
            hooks: DownloadHooks(progress: { _, _ in calls.add(1, ordering: .relaxed) }))
        // Observers and hooks are both called on the engine thread, at the same tick.
        engine.observe { event in if case .progress = event { events.add(1, ordering: .relaxed) } }
        let task = engine.addTask(server.url("/files/slow.bin?throttle=400000"))
        #expect(try await within(seconds: 20, "the download") { try? await task.value }?.bytes == 400_000)
        _ = try await drain(engine)
        #expect(events.load(ordering: .relaxed) > 0)
        #expect(calls.load(ordering: .relaxed) == events.load(ordering: .relaxed))
        await engine.stop()
    }
}
