import Foundation
import Testing

@testable import DLPipe

/// The SQLite state on its own: keys, round trips, foreign files.
@Suite struct StateStoreTests {
    let path = NSTemporaryDirectory() + "dlpipe-state-\(UUID().uuidString.prefix(8))/state.db"

    private func record(_ request: DownloadRequest, target: String) -> DownloadRecord {
        DownloadRecord(
            key: request.deduplicationKey, url: request.url, target: target, status: .finished, bytes: 5,
            total: 5, etag: "\"e\"", lastModified: nil, sha256: nil, attempts: 1, lastError: nil, updatedAt: 0)
    }

    @Test func keysWithTheSameURLAndOtherNamesStayApart() throws {
        let store = try StateStore(path: path)
        let a = DownloadRequest(url: "http://h/x", name: "copy1")
        let b = DownloadRequest(url: "http://h/x", name: "copy2")
        store.save(record(a, target: "copy1"))
        store.save(record(b, target: "copy2"))
        store.flush()
        #expect(store.record(key: a.deduplicationKey)?.target == "copy1")
        #expect(store.record(key: b.deduplicationKey)?.target == "copy2")
        #expect(store.records().count == 2)
    }

    @Test func valuesSurviveReopening() throws {
        do {
            let store = try StateStore(path: path)
            store.setValue("cursor", "[\"i\",42]")
        }
        let again = try StateStore(path: path)
        #expect(again.value("cursor") == "[\"i\",42]")
        #expect(again.value("missing") == nil)
    }
}
