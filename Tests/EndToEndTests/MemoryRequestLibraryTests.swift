import DLPipe
import Foundation
import Testing
import TestSupport

/// The library's side of memory downloads: `DownloadRequest(into: .memory)`
/// finishes with the bytes in `FinishedInfo.body` and nothing on disk, with a
/// state file open.
@Suite struct MemoryRequestLibraryTests: LibrarySuite {
    let fixture: LibraryFixture

    init() throws {
        fixture = try LibraryFixture(label: "memory-lib")
    }

    @Test func aMemoryRequestFinishesWithItsBytesAndWritesNothing() async throws {
        let data = try server.put("data.json", randomBytes: 50_000)
        var configuration = EngineConfiguration()
        configuration.directory = out
        configuration.statePath = out + "/.dlpipe/state.db"
        let engine = try DownloadEngine(configuration: configuration)
        defer { engine.shutdown() }
        let task = engine.addTask(DownloadRequest(url: server.url("/files/data.json"), into: .memory))
        let limited = engine.addTask(DownloadRequest(url: server.url("/files/data.json?chunked=1"), maxSize: 10_000, into: .memory))
        let result = try await within(seconds: 15, "task.result") { await task.result }
        guard case .finished(let file) = result else {
            Issue.record("\(result)")
            return
        }
        #expect(file.body == data)
        #expect(file.path == "")
        #expect(file.bytes == 50_000)
        let over = try await within(seconds: 15, "limited.result") { await limited.result }
        guard case .failed(let error) = over else {
            Issue.record("\(over)")
            return
        }
        #expect(error.kind == .size)
        #expect(listing(out).isEmpty, "\(listing(out))")
    }
}
