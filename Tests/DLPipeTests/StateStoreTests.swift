import Foundation
import Testing

@testable import DLPipe

/// The SQLite state on its own: keys, round trips, foreign files.
@Suite struct StateStoreTests {
    let path = NSTemporaryDirectory() + "dlpipe-state-\(UUID().uuidString.prefix(8))/state.db"

    private func record(_ request: DownloadRequest, target: String) -> DownloadRecord {
        DownloadRecord(
            key: request.deduplicationKey, url: request.url, target: target, status: .finished, bytes: 5,
            total: 5, etag: "\"e\"", lastModified: nil, sha256: nil, mediaType: "text/html", attempts: 1, lastError: nil,
            updatedAt: 0)
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

    /// A state file of schema version 1 (before media types were kept) is
    /// brought to version 2 when opened: its records stay, and the new column
    /// is written and read from then on.
    @Test func aVersionOneFileIsMigratedAndKeepsItsRecords() throws {
        let request = DownloadRequest(url: "http://h/page.html")
        do {
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let old = try SQLiteDatabase(path: path)
            try old.execute("""
                PRAGMA journal_mode=WAL;
                CREATE TABLE dlpipe_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
                INSERT INTO dlpipe_meta VALUES ('schema_version', '1');
                CREATE TABLE downloads(
                  key TEXT PRIMARY KEY, url TEXT NOT NULL, target TEXT, status TEXT NOT NULL,
                  bytes INTEGER NOT NULL DEFAULT 0, total INTEGER, etag TEXT, last_modified TEXT,
                  sha256 TEXT, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT,
                  updated_at REAL NOT NULL) WITHOUT ROWID;
                CREATE TABLE runs(
                  id INTEGER PRIMARY KEY, started_at REAL NOT NULL, ended_at REAL, pid INTEGER NOT NULL,
                  finished INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0,
                  unchanged INTEGER NOT NULL DEFAULT 0);
                CREATE TABLE store(key TEXT PRIMARY KEY, value TEXT NOT NULL);
                """)
            try old.query(
                "INSERT INTO downloads(key, url, target, status, bytes, etag, attempts, updated_at) VALUES (?, ?, 'page.html', 'finished', 5, '\"e\"', 7, 0)",
                [.text(request.deduplicationKey), .text(request.url)])
        }
        let store = try StateStore(path: path)
        let kept = try #require(store.record(key: request.deduplicationKey))
        #expect(kept.target == "page.html" && kept.etag == "\"e\"" && kept.attempts == 7)
        #expect(kept.mediaType == nil, "unknown until the next 200")
        store.save(record(request, target: "page.html"))
        store.flush()
        let again = try StateStore(path: path)
        #expect(again.record(key: request.deduplicationKey)?.mediaType == "text/html")
        var version = ""
        try SQLiteDatabase(path: path).query("SELECT value FROM dlpipe_meta WHERE key = 'schema_version'") { version = $0.text(0) ?? "" }
        #expect(version == "\(StateStore.schemaVersion)")
        #expect(StateStore.schemaVersion == 2)
    }

    @Test func aFileOfANewerVersionIsRefusedAndKept() throws {
        do {
            let store = try StateStore(path: path)
            store.flush()
        }
        try SQLiteDatabase(path: path).execute("UPDATE dlpipe_meta SET value = '99' WHERE key = 'schema_version'")
        #expect(throws: StateStore.Failure.self) { try StateStore(path: path) }
    }
}
