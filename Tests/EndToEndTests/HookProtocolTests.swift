import DLPipe
import Foundation
import Synchronization
import Testing

/// The events a `ScriptedHooks` answers.
struct HookEvents: OptionSet, Sendable {
    let rawValue: Int
    static let response = HookEvents(rawValue: 1)
    static let finished = HookEvents(rawValue: 2)
    static let retrying = HookEvents(rawValue: 4)
    static let failed = HookEvents(rawValue: 8)
}

/// A hook implementation in Swift: what the Lua bridge plugs in the same way.
final class ScriptedHooks: Sendable {
    let asks: HookEvents
    let onResponse: @Sendable (DownloadInfo, ResponseInfo) -> ResponseVerdict
    let onFinished: @Sendable (DownloadInfo, FinishedInfo) -> FinishedVerdict
    let onRetrying: @Sendable (DownloadInfo, DownloadError, Double) -> RetryVerdict
    let onFailed: @Sendable (DownloadInfo, DownloadError) -> FailureVerdict
    let calls = Mutex<[String]>([])

    init(
        asks: HookEvents,
        response: @escaping @Sendable (DownloadInfo, ResponseInfo) -> ResponseVerdict = { _, _ in .proceed() },
        finished: @escaping @Sendable (DownloadInfo, FinishedInfo) -> FinishedVerdict = { _, _ in .keep() },
        retrying: @escaping @Sendable (DownloadInfo, DownloadError, Double) -> RetryVerdict = { _, _, _ in .proceed },
        failed: @escaping @Sendable (DownloadInfo, DownloadError) -> FailureVerdict = { _, _ in .giveUp }
    ) {
        self.asks = asks
        onResponse = response
        onFinished = finished
        onRetrying = retrying
        onFailed = failed
    }

    /// The engine's hooks: a closure for each event in `asks`.
    var downloadHooks: DownloadHooks {
        var hooks = DownloadHooks()
        if asks.contains(.response) { hooks.response = { self.response($0, $1, reply: $2) } }
        if asks.contains(.finished) { hooks.finished = { self.finished($0, $1, reply: $2) } }
        if asks.contains(.retrying) { hooks.retrying = { self.retrying($0, $1, delay: $2, reply: $3) } }
        if asks.contains(.failed) { hooks.failed = { self.failed($0, $1, reply: $2) } }
        return hooks
    }

    func response(_ download: DownloadInfo, _ response: ResponseInfo, reply: @escaping @Sendable (ResponseVerdict) -> Void) {
        calls.withLock { $0.append("response \(download.id)") }
        // Answer from another thread, later, as a script engine would.
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) {
            reply(self.onResponse(download, response))
        }
    }

    func finished(_ download: DownloadInfo, _ result: FinishedInfo, reply: @escaping @Sendable (FinishedVerdict) -> Void) {
        calls.withLock { $0.append("finished \(download.id)") }
        DispatchQueue.global().async { reply(self.onFinished(download, result)) }
    }

    func retrying(_ download: DownloadInfo, _ error: DownloadError, delay: Double, reply: @escaping @Sendable (RetryVerdict) -> Void) {
        calls.withLock { $0.append("retrying \(download.id) \(download.attempt)") }
        DispatchQueue.global().async { reply(self.onRetrying(download, error, delay)) }
    }

    func failed(_ download: DownloadInfo, _ error: DownloadError, reply: @escaping @Sendable (FailureVerdict) -> Void) {
        calls.withLock { $0.append("failed \(download.id) \(download.attempt)") }
        DispatchQueue.global().async { reply(self.onFailed(download, error)) }
    }
}

@Suite struct HookProtocolTests {
    let server: FaultServer
    let out: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("hooks")
    }

    private func run(_ hooks: ScriptedHooks, _ paths: [String]) async throws -> (RunSummary, [DownloadEvent]) {
        var configuration = EngineConfiguration()
        configuration.directory = out
        configuration.backoffBase = 0.05
        let engine = try DownloadEngine(configuration: configuration, hooks: hooks.downloadHooks)
        let collected = Mutex<[DownloadEvent]>([])
        engine.observe { event in collected.withLock { $0.append(event) } }
        for path in paths { engine.add(server.url(path)) }
        let (summary, _) = await engine.waitUntilDrained()
        engine.shutdown()
        return (summary, collected.withLock { $0 })
    }

    @Test func responseHookSkipsByTypeAndRenamesBeforeAByteIsWritten() async throws {
        let image = try server.put("pic.jpg", randomBytes: 50_000)
        try server.put("page.html", bytes: Array("<html></html>".utf8))
        try server.put("big.bin", randomBytes: 2_000_000)
        let hooks = ScriptedHooks(asks: [.response], response: { _, r in
            r.type.hasPrefix("image/") ? .proceed(name: "renamed-" + r.filename, directory: "images") : .skip(reason: "not an image: \(r.type)")
        })
        let (summary, events) = try await run(hooks, ["/files/pic.jpg", "/files/page.html", "/files/big.bin?throttle=200000"])
        #expect(summary.finished == 1 && summary.skipped == 2)
        #expect(sameBytes(out + "/images/renamed-pic.jpg", image))
        #expect(listing(out) == ["images"], "skipped downloads write nothing, not even a part file")
        let skipped = events.compactMap { if case .skipped(_, let reason) = $0 { return reason } else { return nil } }
        #expect(skipped.sorted() == ["not an image: application/octet-stream", "not an image: text/html"])
    }

    @Test func emptyBodiesWaitForTheResponseHookToo() async throws {
        try server.put("empty.txt", bytes: [])
        try server.put("empty.skip", bytes: [])
        let hooks = ScriptedHooks(asks: [.response], response: { d, r in
            r.filename.hasSuffix(".skip") ? .skip(reason: "unwanted") : .proceed(name: "kept.txt")
        })
        let (summary, events) = try await run(hooks, ["/files/empty.txt", "/files/empty.skip", "/files/empty.txt?again=1"])
        #expect(summary.finished == 2 && summary.skipped == 1, "\(summary) \(events)")
        #expect(listing(out) == ["kept.1.txt", "kept.txt"])
        #expect(sameBytes(out + "/kept.txt", []), "an empty file, not a missing one")
    }

    @Test func responseHookCannotEscapeTheOutputDirectory() async throws {
        try server.put("a.bin", randomBytes: 100)
        let hooks = ScriptedHooks(asks: [.response], response: { _, _ in .proceed(name: "../../escaped.bin") })
        let (summary, events) = try await run(hooks, ["/files/a.bin"])
        #expect(summary.failed == 1)
        let kinds = events.compactMap { if case .failed(_, let e) = $0 { return e.kind } else { return nil } }
        #expect(kinds == [.hook])
        #expect(!FileManager.default.fileExists(atPath: out + "/../escaped.bin"))
        #expect(!FileManager.default.fileExists(atPath: out + "/../../escaped.bin"))
    }

    @Test func finishedHookMovesTheFile() async throws {
        let data = try server.put("doc.txt", randomBytes: 1000)
        let hooks = ScriptedHooks(asks: [.finished], finished: { _, f in .keep(name: "moved.txt", directory: "sorted/text") })
        let (summary, events) = try await run(hooks, ["/files/doc.txt"])
        #expect(summary.finished == 1)
        #expect(sameBytes(out + "/sorted/text/moved.txt", data))
        #expect(!FileManager.default.fileExists(atPath: out + "/doc.txt"))
        let paths = events.compactMap { if case .finished(_, let f) = $0 { return f.path } else { return nil } }
        #expect(paths.count == 1 && paths[0].hasSuffix("/sorted/text/moved.txt"))
    }

    @Test func failedHookDecidesRetries() async throws {
        let data = try server.put("flaky.bin", randomBytes: 1000)
        // A 404 is not retried by policy; the hook forces one retry, and the
        // second request succeeds (fail_times=1).
        let hooks = ScriptedHooks(asks: [.failed], failed: { d, e in
            d.attempt == 1 ? .retry(after: 0.01) : .giveUp
        })
        let (summary, _) = try await run(hooks, ["/files/flaky.bin?status=404&fail_times=1"])
        #expect(summary.finished == 1)
        #expect(sameBytes(out + "/flaky.bin", data))
        // And a retrying hook can refuse a retry the policy would have made;
        // failed then runs once, for the end (SPEC 1.2: it used to run per attempt).
        let giveUp = ScriptedHooks(asks: [.retrying, .failed], retrying: { _, _, _ in .giveUp })
        let (second, _) = try await run(giveUp, ["/files/flaky.bin?status=503&k=2"])
        #expect(second.failed == 1)
        #expect(try server.requests(matching: "/files/flaky.bin").filter { ($0["query"] as? [String: String])?["k"] == "2" }.count == 1)
        #expect(giveUp.calls.withLock { $0 } == ["retrying 1 1", "failed 1 1"])
    }

    /// `retrying` runs before each retry the policy grants and may change its
    /// delay; `failed` runs once, when no retry follows, and may mark the
    /// failure handled: counted apart, a `handled` terminal event.
    @Test func retryingRunsPerRetryAndFailedOnceAtTheEnd() async throws {
        try server.put("down.bin", randomBytes: 10)
        let hooks = ScriptedHooks(asks: [.retrying, .failed], retrying: { _, _, _ in .delay(0.01) }, failed: { _, _ in .handled })
        let (summary, events) = try await run(hooks, ["/files/down.bin?status=503"])
        #expect(hooks.calls.withLock { $0 } == ["retrying 1 1", "retrying 1 2", "retrying 1 3", "failed 1 4"])
        let delays = events.compactMap { if case .retrying(_, _, let delay) = $0 { return delay } else { return nil } }
        #expect(delays == [0.01, 0.01, 0.01], "the hook's delay replaced the policy's")
        #expect(summary.failed == 0 && summary.handled == 1)
        #expect(events.filter { if case .handled = $0 { return true } else { return false } }.count == 1)
        #expect(events.filter(\.isTerminal).count == 1)
    }
}
