@testable import DLPipe
import Foundation
import Synchronization
import Testing
import TestSupport

/// Issue 13: what the library answers after a stop, re-adding ended requests,
/// subscriptions that end, and ids that belong to their engine. Every wait is
/// bounded (`within`): a call that hangs fails its test in seconds.
@Suite struct LibraryLifecycleTests: LibrarySuite {
    let fixture: LibraryFixture

    init() throws {
        fixture = try LibraryFixture(label: "libcycle")
    }

    /// Reads `events` to its end (bounded), keeping the terminal events by id.
    private func terminals(of events: AsyncStream<DownloadEvent>, seconds: Double = 10) async throws
        -> [DownloadID: [DownloadEvent]]
    {
        try await within(seconds: seconds, "the event stream's end") {
            var ended: [DownloadID: [DownloadEvent]] = [:]
            for await event in events where event.isTerminal {
                ended[event.download!.id, default: []].append(event)
            }
            return ended
        }
    }

    /// `engine.outcome(of: id)`, failing after `seconds` instead of hanging.
    private func outcome(of id: DownloadID, on engine: DownloadEngine, seconds: Double) async throws -> DownloadOutcome? {
        try await within(seconds: seconds, "outcome(of: \(id))") { await engine.outcome(of: id) }
    }

    // MARK: item 1: every call answers after a stop

    @Test func everyCallAnswersAtOnceAfterStop() async throws {
        try server.put("slow.bin", randomBytes: 400_000)
        try server.put("queued.bin", randomBytes: 1000, seed: 2)
        let engine = try engine(concurrency: 1)
        let events = engine.events()
        let running = engine.add(server.url("/files/slow.bin?stall=100000"))
        let queued = engine.add(server.url("/files/queued.bin"))
        let firstProgress = engine.events()
        _ = try await within(seconds: 10, "a first progress event") {
            for await event in firstProgress { if case .progress = event { return true } }
            return false
        }
        try await within(seconds: 5, "stop()") { await engine.stop() }

        // The downloads open at the stop: one terminal event each, `stopped`.
        let ended = try await terminals(of: events)
        #expect(ended.keys.sorted() == [running, queued])
        for id in [running, queued] {
            #expect(ended[id]?.count == 1, "\(ended[id] ?? [])")
            if case .stopped? = ended[id]?.first {} else { Issue.record("\(id) ended with \(ended[id] ?? [])") }
        }
        #expect(try await outcome(of: running, on: engine, seconds: 2) == .stopped)
        #expect(try await outcome(of: queued, on: engine, seconds: 2) == .stopped)
        _ = try await within(seconds: 2, "waitUntilDrained()") { await engine.waitUntilDrained() }
        let late = try await terminals(of: engine.events(), seconds: 2)
        #expect(late.isEmpty, "a stream made after the stop ends at once")
        try await within(seconds: 2, "a second stop()") { await engine.stop() }
        engine.shutdown()

        // add after the stop: a new id, ended at once as stopped, never started.
        let after = engine.add(server.url("/files/queued.bin?again=1"))
        #expect(after != running && after != queued)
        #expect(try await outcome(of: after, on: engine, seconds: 2) == .stopped)
        #expect(!engine.pause(after) && !engine.cancel(running), "nothing is open after a stop")
        #expect(try server.requests(matching: "/files/queued.bin").isEmpty, "nothing starts after the stop")
        #expect(listing(out) == ["slow.bin.part"], "the stopped download keeps its part file")
    }

    /// `shutdown()` returns at once; a wait made right after it used to hang
    /// when it reached the engine after its thread had ended.
    @Test func shutdownThenOutcomeNeverHangs() async throws {
        try server.put("slow.bin", randomBytes: 200_000)
        for round in 0..<20 {
            let engine = try engine()
            let id = engine.add(server.url("/files/slow.bin?stall=50000&round=\(round)"))
            engine.shutdown()
            #expect(try await outcome(of: id, on: engine, seconds: 3) == .stopped)
            _ = try await within(seconds: 3, "waitUntilDrained() after shutdown()") { await engine.waitUntilDrained() }
        }
    }

    // MARK: item 2: deduplication only while open

    @Test func endedRequestsCanBeAddedAgain() async throws {
        try server.put("small.bin", randomBytes: 1000)
        try server.put("missing.bin", randomBytes: 1000, seed: 3)
        try server.put("slow.bin", randomBytes: 400_000, seed: 2)
        let engine = try engine()
        defer { engine.shutdown() }

        // Open: a repeat is the same download.
        let slow = server.url("/files/slow.bin?stall=100000")
        let cancelled = engine.add(slow)
        #expect(engine.add(slow) == cancelled, "a repeat of an open download gets its id")
        #expect(engine.cancel(cancelled))
        #expect(try await outcome(of: cancelled, on: engine, seconds: 5) == .cancelled)
        let reloaded = engine.add(slow)
        #expect(reloaded != cancelled, "a cancelled request added again is a new download")
        #expect(engine.cancel(reloaded))
        #expect(try await outcome(of: reloaded, on: engine, seconds: 5) == .cancelled)

        let finished = engine.add(server.url("/files/small.bin"))
        guard case .finished? = try await outcome(of: finished, on: engine, seconds: 10) else {
            Issue.record("the first download did not finish")
            return
        }
        let again = engine.add(server.url("/files/small.bin"))
        #expect(again != finished)
        guard case .finished? = try await outcome(of: again, on: engine, seconds: 10) else {
            Issue.record("the download added again did not finish")
            return
        }

        let missing = server.url("/files/missing.bin?status=404")
        let failed = engine.add(missing)
        guard case .failed? = try await outcome(of: failed, on: engine, seconds: 10) else {
            Issue.record("the 404 did not fail")
            return
        }
        let retried = engine.add(missing)
        #expect(retried != failed)
        guard case .failed? = try await outcome(of: retried, on: engine, seconds: 10) else {
            Issue.record("the retried 404 did not fail")
            return
        }
        #expect(try server.requests(matching: "/files/missing.bin").count == 2, "each add asked again")
    }

    /// With a state, a finished request added again is asked about
    /// conditionally, as a re-run would: the file stays, no numbered copy.
    @Test func aFinishedRequestAddedAgainWithAStateIsAskedConditionally() async throws {
        let data = try server.put("small.bin", randomBytes: 1000)
        try FileManager.default.createDirectory(atPath: out + "/.dlpipe", withIntermediateDirectories: true)
        var configuration = EngineConfiguration()
        configuration.directory = out
        configuration.statePath = out + "/.dlpipe/state.db"
        let engine = try DownloadEngine(configuration: configuration)
        defer { engine.shutdown() }
        let url = server.url("/files/small.bin")
        let first = engine.add(url)
        guard case .finished(let placed)? = try await outcome(of: first, on: engine, seconds: 10) else {
            Issue.record("the first download did not finish")
            return
        }
        #expect(!placed.unchanged)
        let again = engine.add(url)
        #expect(again != first)
        guard case .finished(let checked)? = try await outcome(of: again, on: engine, seconds: 10) else {
            Issue.record("the download added again did not finish")
            return
        }
        #expect(checked.unchanged, "304: the file the state placed is kept")
        #expect(checked.path == placed.path)
        #expect(listing(out).filter { !$0.hasPrefix(".") } == ["small.bin"])
        #expect(sameBytes(out + "/small.bin", data))
    }

    /// A program that adds the request again when it sees the terminal event
    /// (a "reload" button) gets a new download, never the one that ended.
    @Test func addingAgainOnTheTerminalEventIsANewDownload() async throws {
        try server.put("small.bin", randomBytes: 1000)
        let engine = try engine()
        defer { engine.shutdown() }
        let events = engine.events()
        let url = server.url("/files/small.bin")
        let first = engine.add(url)
        let second = try await within(seconds: 10, "the terminal event") { () -> DownloadID? in
            for await event in events where event.isTerminal && event.download?.id == first {
                return engine.add(url)
            }
            return nil
        }
        #expect(second != nil && second != first)
        if let second {
            guard case .finished? = try await outcome(of: second, on: engine, seconds: 10) else {
                Issue.record("the reload did not finish")
                return
            }
        }
    }

    // MARK: item 3: subscriptions end, slow readers stay bounded

    @Test func streamsThatEndLeaveTheHub() async throws {
        let engine = try engine()
        defer { engine.shutdown() }
        for _ in 0..<100_000 { _ = engine.events() }
        // Read a few in part and cancel their readers: they leave too.
        for _ in 0..<100 {
            let stream = engine.events()
            let reader = Task { for await _ in stream {} }
            reader.cancel()
            await reader.value
        }
        #expect(engine.hub.subscriberCount == 0, "no dead subscriber stays in the hub")

        var files: [String] = []
        for index in 0..<20 {
            try server.put("f\(index).bin", randomBytes: 20_000, seed: UInt64(index + 1))
            files.append(server.url("/files/f\(index).bin"))
        }
        let kept = engine.events()
        let ids = engine.add(contentsOf: files.map { DownloadRequest(url: $0) })
        let (summary, _) = try await within(seconds: 30, "20 downloads") { await engine.waitUntilDrained() }
        #expect(summary.finished == 20)
        #expect(Set(ids).count == 20)
        #expect(engine.hub.subscriberCount == 1, "only the stream still held")
        withExtendedLifetime(kept) {}
    }

    @Test func aSlowReaderGetsProgressCoalescedAndEveryOtherEvent() async throws {
        try server.put("big.bin", randomBytes: 600_000)
        for index in 0..<20 { try server.put("s\(index).bin", randomBytes: 5000, seed: UInt64(index + 2)) }
        let engine = try engine(progressInterval: 0.01)
        defer { engine.shutdown() }
        let unread = engine.events()
        // What was published, counted on the engine thread (no reader to lag).
        let published = Counter()
        engine.observe { if case .progress = $0 { published.add() } }
        let big = engine.add(server.url("/files/big.bin?throttle=600000"))
        let small = engine.add(contentsOf: (0..<20).map { DownloadRequest(url: server.url("/files/s\($0).bin")) })
        _ = try await within(seconds: 30, "the downloads") { await engine.waitUntilDrained() }
        #expect(published.value > 5, "progress was published \(published.value) times")
        // Unread: at most a few events per download, whatever the bytes.
        let waiting = engine.hub.waitingCount
        #expect(waiting <= 21 * 4 + 1, "\(waiting) events wait for the unread stream")

        let kinds = try await within(seconds: 5, "the unread stream's events") {
            var kinds: [DownloadID: [String]] = [:]
            for await event in unread {
                guard let id = event.download?.id else { break }  // drained
                kinds[id, default: []].append("\(event)".components(separatedBy: "(").first ?? "")
            }
            return kinds
        }
        let bigKinds = kinds[big] ?? []
        #expect(bigKinds.filter { $0 == "progress" }.count <= 1, "coalesced: \(bigKinds)")
        #expect(bigKinds.filter { $0 != "progress" } == ["queued", "response", "finished"], "\(bigKinds)")
        for id in small { #expect(kinds[id]?.last == "finished", "\(kinds[id] ?? [])") }
    }

    // MARK: item 5: ids belong to their engine

    @Test func anIdOfAnotherEngineIsRefused() async throws {
        try server.put("slow.bin", randomBytes: 400_000)
        let a = try engine()
        let otherOut = try TempDir.make("libcycle-b")
        var configuration = EngineConfiguration()
        configuration.directory = otherOut
        configuration.timeout = 600
        let b = try DownloadEngine(configuration: configuration)
        defer {
            a.shutdown()
            b.shutdown()
        }
        let ofA = a.add(server.url("/files/slow.bin?stall=100000&engine=a"))
        let ofB = b.add(server.url("/files/slow.bin?stall=100000&engine=b"))
        #expect(ofA.rawValue == ofB.rawValue, "both are download 1 of their engine")
        #expect(ofA != ofB)
        #expect(!b.cancel(ofA) && !b.pause(ofA) && !b.resume(ofA), "B refuses A's id")
        #expect(try await outcome(of: ofA, on: b, seconds: 2) == nil)
        #expect(b.downloadID(number: ofB.rawValue) == ofB)
        #expect(b.downloadID(number: 2) == nil, "B made no download 2")

        // B's download is untouched: still open, and cancelled only by B itself.
        #expect(b.cancel(ofB))
        #expect(try await outcome(of: ofB, on: b, seconds: 5) == .cancelled)
        #expect(a.cancel(ofA))
        #expect(try await outcome(of: ofA, on: a, seconds: 5) == .cancelled)
        #expect(!a.pause(ofA) && !a.resume(ofA) && !a.cancel(ofA), "an ended download is reported, not acted on")
    }
}

/// A count shared with the engine thread.
private final class Counter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
