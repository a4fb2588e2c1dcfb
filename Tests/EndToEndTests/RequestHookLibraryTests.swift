import DLPipe
import Foundation
import Synchronization
import Testing
import TestSupport

/// `DownloadHooks.request` for Swift programs: asked before every hop, answered
/// exactly once (the first reply counts, later ones are counted and dropped)
/// and within the hook deadline, as every other hook closure.
@Suite struct RequestHookLibraryTests: LibrarySuite {
    let fixture: LibraryFixture

    init() throws {
        fixture = try LibraryFixture(label: "requesthook")
    }

    private func engine(hooks: DownloadHooks, deadline: Double?) throws -> DownloadEngine {
        var configuration = EngineConfiguration(directory: out, hookDeadline: deadline)
        configuration.backoffBase = 0.01
        return try DownloadEngine(configuration: configuration, hooks: hooks)
    }

    private func header(_ request: [String: Any], _ name: String) -> String? {
        (request["headers"] as? [String: String])?[name]
    }

    @Test func everyHopIsAskedAndTheFirstReplyWins() async throws {
        let data = try server.put("hop.bin", randomBytes: 1500)
        let asked = Mutex<[String]>([])
        let hooks = DownloadHooks(request: { _, request, reply in
            asked.withLock { $0.append(request.url) }
            var headers = request.headers
            headers["X-Hop"] = request.url
            reply(.send(headers: headers))
            reply(.send(headers: ["X-Hop": "a second answer"]))
        })
        let engine = try engine(hooks: hooks, deadline: 2)
        let task = engine.addTask(DownloadRequest(
            url: server.url("/redirect/0/files/hop.bin"), headers: ["X-Job": "kept"]))
        let file = try await within(seconds: 20, "a download behind one redirect") { try? await task.value }
        #expect(file?.bytes == Int64(data.count))
        // One call per hop, each with that hop's URL.
        #expect(asked.withLock { $0 } == [server.url("/redirect/0/files/hop.bin"), server.url("/files/hop.bin")])
        let seen = try server.requests(matching: "/")
        #expect(seen.count == 2)
        for request in seen {
            // The first reply's headers went out, the job's own among them.
            #expect(header(request, "x-hop")?.hasSuffix(request["path"] as? String ?? "?") == true, "\(request)")
            #expect(header(request, "x-job") == "kept")
        }
        #expect(engine.ignoredHookReplies == 2)
        // The pending count is right: a drain comes.
        #expect(try await within(seconds: 20, "the drain") { await engine.waitUntilDrained() }.summary.finished == 1)
        await engine.stop()
    }

    @Test func aRequestHookThatNeverRepliesFailsItsDownloadAtTheDeadline() async throws {
        try server.put("never.bin", randomBytes: 800)
        let kept = Mutex<[@Sendable (RequestVerdict) -> Void]>([])
        let hooks = DownloadHooks(request: { _, _, reply in kept.withLock { $0.append(reply) } })
        let engine = try engine(hooks: hooks, deadline: 0.3)
        let started = Date()
        let task = engine.addTask(server.url("/files/never.bin"))
        let outcome = try await within(seconds: 20, "a download whose request hook never replies") { await task.result }
        guard case .failed(let error) = outcome else {
            Issue.record("expected a hook failure, got \(outcome)")
            return
        }
        #expect(error.kind == .hook)
        #expect(error.message.contains("the request hook did not reply within 0.3 s"), "\(error.message)")
        #expect(Date().timeIntervalSince(started) >= 0.3)
        // Nothing was asked of the server, and a reply that comes now starts nothing.
        for reply in kept.withLock({ $0 }) { reply(.send(headers: [:])) }
        #expect(try await within(seconds: 20, "the drain") { await engine.waitUntilDrained() }.summary.failed == 1)
        #expect(try server.requests(matching: "/files/never.bin").isEmpty)
        #expect(engine.ignoredHookReplies == 1)
        await engine.stop()
    }

    @Test func aBadHeaderFromTheHookFailsTheDownloadBeforeAnythingIsSent() async throws {
        try server.put("bad.bin", randomBytes: 300)
        let hooks = DownloadHooks(request: { _, _, reply in reply(.send(headers: ["X-Bad": "a\r\nInjected: yes"])) })
        let engine = try engine(hooks: hooks, deadline: 2)
        let outcome = try await within(seconds: 20, "the download") { await engine.addTask(server.url("/files/bad.bin")).result }
        guard case .failed(let error) = outcome else {
            Issue.record("expected a hook failure, got \(outcome)")
            return
        }
        #expect(error.kind == .hook)
        #expect(try server.requests(matching: "/files/bad.bin").isEmpty)
        await engine.stop()
    }
}
