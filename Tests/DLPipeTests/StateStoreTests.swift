import Foundation
import Testing
import TestSupport

@testable import DLPipe

/// The SQLite state on its own: keys, round trips, foreign files.
@Suite struct StateStoreTests {
    let path: String

    init() throws {
        path = try TempDir.make("state") + "/state.db"
    }

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
        try store.save(record(a, target: "copy1"))
        try store.save(record(b, target: "copy2"))
        try store.flush()
        #expect(try store.record(key: a.deduplicationKey)?.target == "copy1")
        #expect(try store.record(key: b.deduplicationKey)?.target == "copy2")
        #expect(try store.records().count == 2)
    }

    @Test func valuesSurviveReopening() throws {
        do {
            let store = try StateStore(path: path)
            try store.setValue("cursor", "[\"i\",42]")
        }
        let again = try StateStore(path: path)
        #expect(try again.value("cursor") == "[\"i\",42]")
        #expect(try again.value("missing") == nil)
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
        let kept = try #require(try store.record(key: request.deduplicationKey))
        #expect(kept.target == "page.html" && kept.etag == "\"e\"" && kept.attempts == 7)
        #expect(kept.mediaType == nil, "unknown until the next 200")
        try store.save(record(request, target: "page.html"))
        try store.flush()
        let again = try StateStore(path: path)
        #expect(try again.record(key: request.deduplicationKey)?.mediaType == "text/html")
        var version = ""
        try SQLiteDatabase(path: path).query("SELECT value FROM dlpipe_meta WHERE key = 'schema_version'") { version = $0.text(0) ?? "" }
        #expect(version == "\(StateStore.schemaVersion)")
        #expect(StateStore.schemaVersion == 9)
    }

    /// Version 6 folds equivalent spellings of a URL into one key: a version 5
    /// file's records are found under the new spelling, and of two records
    /// that fold into one the newer stays while the other's file is kept as
    /// released (still listed, its name still taken).
    @Test func aVersionFiveFileIsReKeyedByTheNormalSpelling() throws {
        let older = DownloadRequest(url: "http://h/x")
        let newer = DownloadRequest(url: "HTTP://H:80/a/../x#top")
        let other = DownloadRequest(url: "http://h/%7Ey", directory: "d")
        let normal = DownloadRequest(url: "http://h/z")
        do {
            let store = try StateStore(path: path)
            for (request, target, updated) in [(older, "x", 1.0), (newer, "x.1", 2.0), (other, "d/~y", 1.0), (normal, "z", 1.0)] {
                var saved = record(request, target: target)
                saved.updatedAt = updated
                saved.placed = PlacedFile(path: target, size: 5)
                try store.save(saved)
            }
            try store.flush()
        }
        try SQLiteDatabase(path: path).execute("""
            ALTER TABLE downloads DROP COLUMN segments;
            ALTER TABLE downloads DROP COLUMN placed_mtime_ns;
            UPDATE dlpipe_meta SET value = '5' WHERE key = 'schema_version';
            """)
        let store = try StateStore(path: path)
        let folded = try #require(try store.record(key: DownloadRequest(url: "http://h/x").deduplicationKey))
        #expect(folded.target == "x.1" && folded.url == "http://h/x", "the newer record, under the normal URL")
        let moved = try #require(try store.record(key: DownloadRequest(url: "http://h/~y", directory: "d").deduplicationKey))
        #expect(moved.target == "d/~y")
        #expect(try store.record(key: normal.deduplicationKey)?.target == "z", "a normal key stays as it was")
        #expect(try store.record(key: newer.deduplicationKey) == nil && store.record(key: other.deduplicationKey) == nil)
        #expect(try store.releasedFiles().map(\.path) == ["x"], "the older record's file is still known")
    }

    /// Version 3 remembers the placed file apart from the status; a version 2
    /// file's finished records claim their own targets, the others nothing.
    @Test func aVersionTwoFileLearnsWhatItsFinishedRecordsPlaced() throws {
        let done = DownloadRequest(url: "http://h/done.bin")
        let half = DownloadRequest(url: "http://h/half.bin")
        do {
            let store = try StateStore(path: path)
            try store.save(record(done, target: "done.bin"))
            var partial = record(half, target: "half.bin")
            partial.status = .partial
            try store.save(partial)
            try store.flush()
        }
        // Back to version 2: the columns of version 3 go (DROP COLUMN, SQLite 3.35+).
        try SQLiteDatabase(path: path).execute("""
            ALTER TABLE downloads DROP COLUMN segments;
            ALTER TABLE downloads DROP COLUMN placed_target;
            ALTER TABLE downloads DROP COLUMN placed_size;
            ALTER TABLE downloads DROP COLUMN placed_inode;
            ALTER TABLE downloads DROP COLUMN placed_mtime_ns;
            DROP TABLE released;
            DROP TABLE written;
            UPDATE dlpipe_meta SET value = '2' WHERE key = 'schema_version';
            """)
        let store = try StateStore(path: path)
        #expect(try store.record(key: done.deduplicationKey)?.placed == PlacedFile(path: "done.bin", size: 5))
        #expect(try store.record(key: half.deduplicationKey)?.placed == nil)
        var kept = try #require(try store.record(key: half.deduplicationKey))
        kept.placed = PlacedFile(path: "half.bin", size: 9, inode: UInt64.max)
        try store.save(kept)
        try store.flush()
        #expect(try StateStore(path: path).record(key: half.deduplicationKey)?.placed?.inode == UInt64.max)
    }

    /// Version 4 remembers the files scripts wrote (dl.write, dl.append); a
    /// version 3 file gets the empty table and keeps its downloads, which
    /// count as downloads' files for the scripts' rules.
    @Test func aVersionThreeFileLearnsTheFilesScriptsWrite() throws {
        let done = DownloadRequest(url: "http://h/done.bin")
        do {
            let store = try StateStore(path: path)
            try store.save(record(done, target: "done.bin"))
            try store.flush()
        }
        try SQLiteDatabase(path: path).execute("""
            ALTER TABLE downloads DROP COLUMN segments;
            DROP TABLE written;
            ALTER TABLE downloads DROP COLUMN placed_mtime_ns;
            UPDATE dlpipe_meta SET value = '3' WHERE key = 'schema_version';
            """)
        let store = try StateStore(path: path)
        #expect(try store.record(key: done.deduplicationKey)?.target == "done.bin")
        #expect(try store.isDownloadFile("done.bin"))
        #expect(try !store.isDownloadFile("other.bin"))
        #expect(try store.writer(of: "index.json") == nil)
        try store.setWriter(of: "index.json", to: "feed")
        #expect(try StateStore(path: path).writer(of: "index.json") == "feed")
        try store.forgetDownloadFile("done.bin")
        #expect(try store.record(key: done.deduplicationKey) == nil)
        #expect(try !store.isDownloadFile("done.bin"))
    }

    /// Version 6 remembers the placed file's modification time; a version 5
    /// file opens with its records, which have none until a run sees their
    /// file again.
    @Test func aVersionFiveFileOpensAndLearnsPlacedTimes() throws {
        let done = DownloadRequest(url: "http://h/done.bin")
        do {
            let store = try StateStore(path: path)
            var finished = record(done, target: "done.bin")
            finished.placed = PlacedFile(path: "done.bin", size: 5, inode: 3)
            try store.save(finished)
            try store.flush()
        }
        try SQLiteDatabase(path: path).execute("""
            ALTER TABLE downloads DROP COLUMN segments;
            ALTER TABLE downloads DROP COLUMN placed_mtime_ns;
            UPDATE dlpipe_meta SET value = '5' WHERE key = 'schema_version';
            """)
        let store = try StateStore(path: path)
        var kept = try #require(try store.record(key: done.deduplicationKey))
        #expect(kept.placed == PlacedFile(path: "done.bin", size: 5, inode: 3, modified: nil))
        kept.placed?.modified = 1_700_000_000_123_456_789
        try store.save(kept)
        try store.flush()
        #expect(try StateStore(path: path).record(key: done.deduplicationKey)?.placed?.modified == 1_700_000_000_123_456_789)
        var version = ""
        try SQLiteDatabase(path: path).query("SELECT value FROM dlpipe_meta WHERE key = 'schema_version'") { version = $0.text(0) ?? "" }
        #expect(version == "9")
    }

    /// Version 9 keeps a split download's segments: a version 8 file gains
    /// the column, its records read without segments, and a partial record's
    /// segments come back as written.
    @Test func aVersionEightFileLearnsSegments() throws {
        let old = DownloadRequest(url: "http://example.com/old")
        do {
            let store = try StateStore(path: path)
            try store.save(record(old, target: "old"))
            try store.flush()
        }
        try SQLiteDatabase(path: path).execute("""
            ALTER TABLE downloads DROP COLUMN segments;
            UPDATE dlpipe_meta SET value = '8' WHERE key = 'schema_version';
            """)
        let store = try StateStore(path: path)
        #expect(try store.record(key: old.deduplicationKey)?.segments == nil)
        let split = DownloadRequest(url: "http://example.com/big")
        var partial = record(split, target: "big")
        partial.status = .partial
        partial.segments = "0:100:1048576,1048576:1048576:2097152"
        try store.save(partial)
        try store.flush()
        #expect(try StateStore(path: path).record(key: split.deduplicationKey)?.segments == partial.segments)
    }

    /// Version 8 keys IDN hosts by their ASCII form: a record an older dlpipe
    /// wrote under the Unicode host is found under the punycode one.
    @Test func aVersionSevenFileIsReKeyedByTheASCIIHost() throws {
        let ascii = DownloadRequest(url: "http://xn--bcher-kva.example/f")
        #expect(URLNormalization.normalize("http://B\u{00FC}cher.example/f") == ascii.url)
        do {
            let store = try StateStore(path: path)
            try store.save(record(ascii, target: "f"))
            try store.flush()
        }
        let unicodeURL = "http://b\u{00FC}cher.example/f"
        let unicodeKey = ascii.deduplicationKey.replacingOccurrences(of: ascii.url, with: unicodeURL)
        try SQLiteDatabase(path: path).query(
            "UPDATE downloads SET key = ?, url = ?", [.text(unicodeKey), .text(unicodeURL)])
        try SQLiteDatabase(path: path).execute("ALTER TABLE downloads DROP COLUMN segments; UPDATE dlpipe_meta SET value = '7' WHERE key = 'schema_version';")
        let store = try StateStore(path: path)
        let kept = try #require(try store.record(key: ascii.deduplicationKey))
        #expect(kept.url == ascii.url && kept.target == "f")
        #expect(try store.records().count == 1)
    }

    @Test func aFileOfANewerVersionIsRefusedAndKept() throws {
        do {
            let store = try StateStore(path: path)
            try store.flush()
        }
        try SQLiteDatabase(path: path).execute("UPDATE dlpipe_meta SET value = '99' WHERE key = 'schema_version'")
        #expect(throws: StateStore.Failure.self) { try StateStore(path: path) }
    }
}
