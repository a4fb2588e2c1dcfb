import Foundation

/// What the state remembers of one download (SPEC 4).
public struct DownloadRecord: Sendable, Hashable {
    /// `handled`: failed, and a `failed` hook dealt with it (stored as text: an
    /// older dlpipe reads it as failed, no schema change).
    public enum Status: String, Sendable { case partial, finished, failed, handled, cancelled, skipped }
    /// The request's identity: URL and requested target (`DownloadRequest.deduplicationKey`).
    public var key: String
    public var url: String
    /// The final file, relative to the output directory.
    public var target: String?
    public var status: Status
    public var bytes: Int64
    public var total: Int64?
    public var etag: String?
    public var lastModified: String?
    public var sha256: String?
    /// The media type of the file's last 200 (`f.type` when a later run keeps
    /// the file: a 304, or refresh "never").
    public var mediaType: String?
    /// Attempts in the run that last touched the download.
    public var attempts: Int
    public var lastError: String?
    public var updatedAt: Double
    /// The file the state last placed for this download, kept apart from
    /// `status`: a run that replaces it saves a `partial` record (the new
    /// response's facts) long before the new file is in place, and a run
    /// killed meanwhile must still know that the file under the name is its own.
    public var placed: PlacedFile? = nil
}

/// A file that dlpipe put under its name: where, how large, and (once a later
/// run has seen it) its inode, which tells it apart from a newer version
/// renamed over it.
public struct PlacedFile: Sendable, Hashable {
    /// Relative to the output directory.
    public var path: String
    public var size: Int64
    public var inode: UInt64?

    public init(path: String, size: Int64, inode: UInt64? = nil) {
        self.path = path
        self.size = size
        self.inode = inode
    }
}

/// A file the state placed that its download left behind when it placed a
/// newer version under another name (a handler renamed it on a re-run, or
/// another program had taken the name): still on disk, no longer tracked.
public struct ReleasedFile: Sendable, Hashable {
    /// Relative to the output directory.
    public var path: String
    public var url: String
    public var size: Int64

    public init(path: String, url: String, size: Int64) {
        self.path = path
        self.url = url
        self.size = size
    }
}

/// One run of a job, as `dlpipe status` shows it.
public struct RunRecord: Sendable, Hashable {
    public var id: Int64
    public var startedAt: Double
    public var endedAt: Double?
    public var pid: Int64
    public var finished: Int64
    public var failed: Int64
    public var unchanged: Int64
}

/// The SQLite state of an output directory (`DIR/.dlpipe/state.db`, WAL). Writes
/// are batched into one transaction that `flush` commits: the engine flushes at
/// the end of each loop turn and before a part file is created, so a record
/// always exists for every part file on disk. synchronous=NORMAL: a commit
/// survives a killed process at once; a power loss may drop the last commits,
/// which the next run recognises from the files themselves.
public final class StateStore: @unchecked Sendable {
    // @unchecked: used by one thread at a time (the engine loop, or a command).
    private let db: SQLiteDatabase
    private var inTransaction = false
    /// False when the file held no download records when it was opened (a
    /// first run; see `StateWriter.record`).
    private(set) var hadRecords = true
    public let path: String
    static let schemaVersion = 4
    /// What brings a file of version N - 1 to version N, by N. Each runs in a
    /// transaction that also bumps `schema_version`, so a file is never half
    /// migrated.
    private static let migrations: [Int: String] = [
        2: "ALTER TABLE downloads ADD COLUMN media_type TEXT;",
        // What was placed: a finished record's own file, the only one an older
        // dlpipe knew of.
        3: """
            ALTER TABLE downloads ADD COLUMN placed_target TEXT;
            ALTER TABLE downloads ADD COLUMN placed_size INTEGER;
            ALTER TABLE downloads ADD COLUMN placed_inode INTEGER;
            UPDATE downloads SET placed_target = target, placed_size = bytes WHERE status = 'finished';
            CREATE TABLE released(path TEXT PRIMARY KEY, url TEXT NOT NULL, size INTEGER NOT NULL);
            """,
        // Files that scripts wrote (dl.write, dl.append), and the job that wrote each.
        4: "CREATE TABLE written(path TEXT PRIMARY KEY, job TEXT NOT NULL) WITHOUT ROWID;",
    ]

    /// A state file that cannot be used; nothing is deleted.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// Opens (creating when missing) the state at `path`.
    public init(path: String) throws(Failure) {
        self.path = path
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty, let code = FileSystem.makeDirectories(folder) {
            throw Failure(message: "cannot create \(folder): \(String(cString: strerror(code)))")
        }
        do {
            db = try SQLiteDatabase(path: path)
            // Checked before anything is written, so a foreign file stays as it was.
            let tables = try check()
            if tables.isEmpty {
                // A new file is switched to WAL and given its tables without
                // syncs: ten fdatasyncs otherwise (6 ms on this machine's disk,
                // far more on a spinning one). A power loss in these moments can
                // only spoil an empty state, which the next run reports.
                try db.execute("PRAGMA synchronous=OFF; PRAGMA journal_mode=WAL;")
                try create()
            } else {
                try db.execute("PRAGMA journal_mode=WAL;")
            }
            try db.execute("PRAGMA synchronous=NORMAL;")
            var any = false
            try db.query("SELECT 1 FROM downloads LIMIT 1") { _ in any = true }
            hadRecords = any
        } catch let error as SQLiteDatabase.Failure {
            // SQLite reports a descriptor shortage as "unable to open database
            // file", and the advice below would send the user after the wrong cause.
            if DescriptorBudget.exhausted() {
                throw Failure(message: "the state file \(path) cannot be opened: too many open files (the limit is \(DescriptorBudget.limit()); raise it with ulimit -n)")
            }
            throw Failure(message: "the state file \(path) cannot be used: \(error.message) (nothing was changed; move it away or use --state FILE)")
        } catch let error as Failure {
            throw error
        } catch {
            throw Failure(message: "\(path): \(error)")
        }
    }

    /// The file's tables; throws unless it is new (no tables) or a dlpipe state
    /// of a version this build knows.
    private func check() throws -> [String] {
        var tables: [String] = []
        try db.query("SELECT name FROM sqlite_master WHERE type = 'table'") { tables.append($0.text(0) ?? "") }
        if tables.isEmpty { return tables }
        guard tables.contains("dlpipe_meta") else {
            throw Failure(message: "\(path) is an SQLite file but not a dlpipe state (tables: \(tables.sorted().joined(separator: ", "))); nothing was changed")
        }
        var version = 0
        try db.query("SELECT value FROM dlpipe_meta WHERE key = 'schema_version'") { version = Int($0.text(0) ?? "") ?? 0 }
        guard version >= 1, version <= Self.schemaVersion else {
            throw Failure(message: "\(path) has state schema version \(version); this dlpipe knows 1 to \(Self.schemaVersion)")
        }
        try migrate(from: version)
        return tables
    }

    /// Brings a state file of an older version up to this one. Run inside
    /// BEGIN IMMEDIATE, which waits for another connection's migration, and
    /// reads the version again there, so two openers never migrate twice.
    private func migrate(from version: Int) throws {
        guard version < Self.schemaVersion else { return }
        try db.execute("BEGIN IMMEDIATE;")
        do {
            var current = version
            try db.query("SELECT value FROM dlpipe_meta WHERE key = 'schema_version'") { current = Int($0.text(0) ?? "") ?? current }
            while current < Self.schemaVersion {
                current += 1
                try db.execute(Self.migrations[current]!)
                try db.execute("UPDATE dlpipe_meta SET value = '\(current)' WHERE key = 'schema_version';")
            }
            try db.execute("COMMIT;")
        } catch {
            try? db.execute("ROLLBACK;")
            throw error
        }
    }

    /// Creates the tables of a new state file.
    private func create() throws {
        // downloads is keyed by its text key alone (WITHOUT ROWID: one b-tree
        // per write, not a table and its key index), and has no index on
        // status: `dlpipe status` reads every row anyway, and each index is
        // another b-tree written twice per download. Files made before this
        // have both; they are read and written the same.
        try db.execute("""
            BEGIN;
            CREATE TABLE dlpipe_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            INSERT INTO dlpipe_meta VALUES ('schema_version', '\(Self.schemaVersion)');
            CREATE TABLE downloads(
              key TEXT PRIMARY KEY, url TEXT NOT NULL, target TEXT, status TEXT NOT NULL,
              bytes INTEGER NOT NULL DEFAULT 0, total INTEGER, etag TEXT, last_modified TEXT,
              sha256 TEXT, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT,
              updated_at REAL NOT NULL, media_type TEXT,
              placed_target TEXT, placed_size INTEGER, placed_inode INTEGER) WITHOUT ROWID;
            CREATE TABLE runs(
              id INTEGER PRIMARY KEY, started_at REAL NOT NULL, ended_at REAL, pid INTEGER NOT NULL,
              finished INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0,
              unchanged INTEGER NOT NULL DEFAULT 0);
            CREATE TABLE store(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE released(path TEXT PRIMARY KEY, url TEXT NOT NULL, size INTEGER NOT NULL);
            CREATE TABLE written(path TEXT PRIMARY KEY, job TEXT NOT NULL) WITHOUT ROWID;
            COMMIT;
            """)
    }

    // MARK: writes (batched)

    private func begin() throws {
        if !inTransaction {
            // Prepared once like every other statement: sqlite3_exec would parse
            // BEGIN and COMMIT again on every loop turn.
            try db.query("BEGIN IMMEDIATE")
            inTransaction = true
        }
    }

    /// Commits the batch.
    public func flush() {
        guard inTransaction else { return }
        inTransaction = false
        do {
            try db.query("COMMIT")
        } catch {
            // A failed commit (a full disk) must not leave the connection inside a
            // transaction that every later write would trip over.
            try? db.execute("ROLLBACK")
        }
    }

    /// Writes (inserts or replaces) a download's record into the batch.
    public func save(_ r: DownloadRecord) {
        try? begin()
        let values: [SQLValue] = [
            .text(r.url), SQLValue(r.target), .text(r.status.rawValue), .int(r.bytes),
            SQLValue(r.total), SQLValue(r.etag), SQLValue(r.lastModified), SQLValue(r.sha256),
            .int(Int64(r.attempts)), SQLValue(r.lastError), .real(Date().timeIntervalSince1970),
            SQLValue(r.mediaType), SQLValue(r.placed?.path), SQLValue(r.placed?.size),
            SQLValue(r.placed?.inode.map { Int64(bitPattern: $0) }), .text(r.key),
        ]
        // An UPDATE in place when the record exists (every download's second
        // write): INSERT OR REPLACE would delete and re-insert the row and both
        // of its index entries.
        // A failed write (a full disk) is not fatal here: the commit fails too,
        // and the next run sees the state as it was.
        do throws(SQLiteDatabase.Failure) {
            try db.query("""
                UPDATE downloads SET url = ?, target = ?, status = ?, bytes = ?, total = ?, etag = ?,
                last_modified = ?, sha256 = ?, attempts = ?, last_error = ?, updated_at = ?, media_type = ?,
                placed_target = ?, placed_size = ?, placed_inode = ?
                WHERE key = ?
                """, values)
            if db.changes == 0 {
                try db.query("""
                    INSERT INTO downloads
                    (url, target, status, bytes, total, etag, last_modified, sha256, attempts, last_error, updated_at,
                     media_type, placed_target, placed_size, placed_inode, key)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, values)
            }
        } catch {}
    }

    /// Remembers a file the state placed and no longer tracks (batched).
    public func release(_ file: ReleasedFile) {
        try? begin()
        try? db.query("INSERT OR REPLACE INTO released(path, url, size) VALUES (?, ?, ?)",
                      [.text(file.path), .text(file.url), .int(file.size)])
    }

    /// Starts a run record; returns its id.
    public func startRun() -> Int64 {
        var id: Int64 = 0
        try? begin()
        try? db.query("INSERT INTO runs(started_at, pid) VALUES (?, ?)", [.real(Date().timeIntervalSince1970), .int(Int64(getpid()))])
        try? db.query("SELECT last_insert_rowid()") { id = $0.int(0) ?? 0 }
        flush()
        return id
    }

    /// Ends a run record with its counts.
    public func endRun(_ id: Int64, summary: RunSummary) {
        try? begin()
        try? db.query("UPDATE runs SET ended_at = ?, finished = ?, failed = ?, unchanged = ? WHERE id = ?",
                      [.real(Date().timeIntervalSince1970), .int(Int64(summary.finished)), .int(Int64(summary.failed)),
                       .int(Int64(summary.unchanged)), .int(id)])
        flush()
    }

    // MARK: reads

    /// The record of a request, if any.
    public func record(key: String) -> DownloadRecord? {
        var found: DownloadRecord?
        try? db.query("SELECT \(Self.columns) FROM downloads WHERE key = ?", [.text(key)]) { found = Self.record($0) }
        return found
    }

    /// Every record, optionally of one status.
    public func records(status: DownloadRecord.Status? = nil) -> [DownloadRecord] {
        var all: [DownloadRecord] = []
        let filter = status.map { " WHERE status = '\($0.rawValue)'" } ?? ""
        try? db.query("SELECT \(Self.columns) FROM downloads\(filter) ORDER BY updated_at") { all.append(Self.record($0)) }
        return all
    }

    /// Files the state placed and no longer tracks: released by their
    /// downloads, and not placed again since by any download.
    public func releasedFiles() -> [ReleasedFile] {
        var all: [ReleasedFile] = []
        try? db.query("""
            SELECT path, url, size FROM released
            WHERE path NOT IN (SELECT placed_target FROM downloads WHERE placed_target IS NOT NULL)
            ORDER BY path
            """) { all.append(ReleasedFile(path: $0.text(0) ?? "", url: $0.text(1) ?? "", size: $0.int(2) ?? 0)) }
        return all
    }

    /// The last `limit` runs, newest first.
    public func runs(limit: Int) -> [RunRecord] {
        var all: [RunRecord] = []
        try? db.query("SELECT id, started_at, ended_at, pid, finished, failed, unchanged FROM runs ORDER BY id DESC LIMIT ?", [.int(Int64(limit))]) { row in
            all.append(RunRecord(id: row.int(0) ?? 0, startedAt: row.real(1) ?? 0, endedAt: row.real(2), pid: row.int(3) ?? 0,
                                 finished: row.int(4) ?? 0, failed: row.int(5) ?? 0, unchanged: row.int(6) ?? 0))
        }
        return all
    }

    /// A `dl.store` value (JSON text), if set.
    public func value(_ key: String) -> String? {
        var found: String?
        try? db.query("SELECT value FROM store WHERE key = ?", [.text(key)]) { found = $0.text(0) }
        return found
    }

    /// Sets a `dl.store` value (JSON text), committed at once.
    public func setValue(_ key: String, _ json: String) {
        try? begin()
        try? db.query("INSERT OR REPLACE INTO store(key, value) VALUES (?, ?)", [.text(key), .text(json)])
        flush()
    }

    // MARK: files that scripts wrote (dl.write, dl.append), each committed at once

    /// The job whose script wrote the file at `path` (relative to the output
    /// directory), or nil when no script did.
    public func writer(of path: String) -> String? {
        var found: String?
        try? db.query("SELECT job FROM written WHERE path = ?", [.text(path)]) { found = $0.text(0) }
        return found
    }

    /// Remembers that `job` wrote the file at `path`.
    public func setWriter(of path: String, to job: String) {
        try? begin()
        try? db.query("INSERT OR REPLACE INTO written(path, job) VALUES (?, ?)", [.text(path), .text(job)])
        flush()
    }

    /// Forgets the script-written file at `path` (it was removed).
    public func forgetWritten(_ path: String) {
        try? begin()
        try? db.query("DELETE FROM written WHERE path = ?", [.text(path)])
        flush()
    }

    /// Every download's file: the targets downloads have or had, the files
    /// the state placed, and those it placed and released (one scan).
    public func downloadFiles() -> Set<String> {
        var all = Set<String>()
        try? db.query("""
            SELECT target FROM downloads WHERE target IS NOT NULL
            UNION SELECT placed_target FROM downloads WHERE placed_target IS NOT NULL
            UNION SELECT path FROM released
            """) { if let path = $0.text(0) { all.insert(path) } }
        return all
    }

    /// True when `path` is a download's file (as `downloadFiles`). No index on
    /// these columns: each would cost the engine's every save; a script asks
    /// when it removes a file or is refused one.
    public func isDownloadFile(_ path: String) -> Bool {
        var found = false
        try? db.query("""
            SELECT 1 FROM downloads WHERE target = ?1 OR placed_target = ?1
            UNION ALL SELECT 1 FROM released WHERE path = ?1 LIMIT 1
            """, [.text(path)]) { _ in found = true }
        return found
    }

    /// Forgets the downloads whose file is `path` (a script removed it), so
    /// that the next run fetches them again.
    public func forgetDownloadFile(_ path: String) {
        try? begin()
        try? db.query("DELETE FROM downloads WHERE target = ?1 OR placed_target = ?1", [.text(path)])
        try? db.query("DELETE FROM released WHERE path = ?", [.text(path)])
        flush()
    }

    private static let columns = "key, url, target, status, bytes, total, etag, last_modified, sha256, attempts, last_error, updated_at, media_type, placed_target, placed_size, placed_inode"

    private static func record(_ row: SQLRow) -> DownloadRecord {
        DownloadRecord(
            key: row.text(0) ?? "", url: row.text(1) ?? "", target: row.text(2),
            status: DownloadRecord.Status(rawValue: row.text(3) ?? "") ?? .failed, bytes: row.int(4) ?? 0,
            total: row.int(5), etag: row.text(6), lastModified: row.text(7), sha256: row.text(8),
            mediaType: row.text(12), attempts: Int(row.int(9) ?? 0), lastError: row.text(10),
            updatedAt: row.real(11) ?? 0,
            placed: row.text(13).map { PlacedFile(path: $0, size: row.int(14) ?? 0, inode: row.int(15).map { UInt64(bitPattern: $0) }) })
    }
}
