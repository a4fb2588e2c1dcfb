import DLPipe
import Foundation
import Synchronization
import Testing
import TestSupport

/// The library's promises at the edges (issue 36), through the `DLPipe`
/// product as another package uses it: memory downloads report progress as
/// file downloads do, the last progress reaches the total, errors describe
/// themselves, and the engine's thread has a name of its own.
@Suite struct LibraryProgressTests: LibrarySuite {
    let fixture: LibraryFixture

    init() throws {
        fixture = try LibraryFixture(label: "library-progress")
    }

    /// The progress events of a task's stream, in order, once the task ended.
    private func progress(of task: DownloadTask) async throws -> [ProgressInfo] {
        try await within(seconds: 20, "the task's events") {
            var seen: [ProgressInfo] = []
            for await event in task.events { if case .progress(_, let p) = event { seen.append(p) } }
            return seen
        }
    }

    @Test func aMemoryDownloadReportsProgressUpToItsTotal() async throws {
        try server.put("m.bin", randomBytes: 400_000)
        let hooked = Mutex<[Int64]>([])
        let engine = try engine(hooks: DownloadHooks(progress: { _, p in hooked.withLock { $0.append(p.bytes) } }))
        defer { engine.shutdown() }
        let task = engine.addTask(
            DownloadRequest(url: server.url("/files/m.bin?throttle=800000"), maxSize: 1_000_000, into: .memory))
        // Read while it streams: a stream read later gets the newest progress only.
        async let streamed = progress(of: task)
        guard case .finished(let file) = try await within(seconds: 20, "task.result", { await task.result }) else {
            Issue.record("the memory download did not finish")
            return
        }
        #expect(file.body?.count == 400_000)
        let seen = try await streamed
        #expect(seen.last?.bytes == 400_000 && seen.last?.fraction == 1.0, "\(seen.map(\.bytes))")
        // The hook gets every progress call, as for a file download.
        let calls = hooked.withLock { $0 }
        #expect(calls.count >= 3, "progress while the body streams in: \(calls)")
        #expect(calls == calls.sorted() && Set(calls).count == calls.count && calls.last == 400_000, "\(calls)")
        #expect(Set(seen.map(\.bytes)).isSubset(of: Set(calls)), "the stream's events are the hook's, coalesced")
    }

    /// A program that waits `while progress < 1.0` must end: the last event
    /// says the whole body, however fast it came.
    @Test func theLastProgressOfAFileReachesTheTotal() async throws {
        try server.put("f.bin", randomBytes: 300_000)
        let engine = try engine()
        defer { engine.shutdown() }
        let task = engine.addTask(server.url("/files/f.bin"))
        guard case .finished = try await within(seconds: 20, "task.result", { await task.result }) else {
            Issue.record("the download did not finish")
            return
        }
        let seen = try await progress(of: task)
        #expect(seen.last?.bytes == 300_000 && seen.last?.fraction == 1.0, "\(seen.map(\.bytes))")
    }

    /// Bytes flow from the first report on: no progress of a transfer reads
    /// a rate of 0, the first included (it counts from the response).
    @Test func everyProgressWhileBytesFlowHasARate() async throws {
        try server.put("r.bin", randomBytes: 400_000)
        let rates = Mutex<[Double]>([])
        let engine = try engine(hooks: DownloadHooks(progress: { _, p in rates.withLock { $0.append(p.rate) } }))
        defer { engine.shutdown() }
        let task = engine.addTask(server.url("/files/r.bin?throttle=800000"))
        guard case .finished = try await within(seconds: 20, "task.result", { await task.result }) else {
            Issue.record("the download did not finish")
            return
        }
        let seen = rates.withLock { $0 }
        #expect(seen.count >= 3 && seen.allSatisfy { $0 > 0 }, "\(seen)")
    }

    @Test func aSizeErrorNamesMaxSizeAndDescribesItself() async throws {
        try server.put("big.bin", randomBytes: 50_000)
        let engine = try engine()
        defer { engine.shutdown() }
        let task = engine.addTask(DownloadRequest(url: server.url("/files/big.bin"), maxSize: 1000))
        guard case .failed(let error) = try await within(seconds: 20, "task.result", { await task.result }) else {
            Issue.record("the download did not fail")
            return
        }
        #expect(error.kind == .size)
        #expect(error.message.contains("(maxSize)") && !error.message.contains("max_size"), "\(error.message)")
        let asError: any Error = error
        #expect(asError is any LocalizedError)
        #expect(asError.localizedDescription == error.message)
    }

    @Test func theEngineThreadHasItsName() async throws {
        let engine = try engine()
        defer { engine.shutdown() }
        let task = engine.addTask(server.url("/files/none.bin"))
        _ = try await within(seconds: 20, "task.result") { await task.result }
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        let names = tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
        #expect(names.contains("dlpipe-engine\n"), "\(Set(names))")
    }
}
