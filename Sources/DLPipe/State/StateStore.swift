import Foundation

/// The SQLite state of an output directory (`DIR/.dlpipe/state.db`, WAL). Writes
/// are batched into one transaction that `flush` commits: the engine flushes at
/// the end of each loop turn and before a part file is created, so a record
/// always exists for every part file on disk. synchronous=NORMAL: a commit
/// survives a killed process at once; a power loss may drop the last commits,
/// which the next run recognises from the files themselves.
package final class StateStore: DownloadState, @unchecked Sendable {
    // @unchecked: used by one thread at a time (the engine loop, or a command).
    // Not private: the schema (StateStore+Schema) and the script-written files
    // (StateStore+ScriptFiles) are extensions in files of their own.
    let db: SQLiteDatabase
    private var inTransaction = false
    /// False when the file held no download records when it was opened (a
    /// first run; see `StateWriter.record`).
    package private(set) var hadRecords = true
    public let path: String
    /// Space kept for the run's last commit (`SpareSpace`).
    private let spare: SpareSpace
    static let schemaVersion = 9
    /// The `segments` column keeps a split download's progress.
    package var keepsSegments: Bool { true }
    /// How credentials in URLs are stored (never as they are).
    var credentials = StoredCredentials(secret: [])
    /// A state file that cannot be used; nothing is deleted.
    package typealias Failure = StateFailure

    /// Opens (creating when missing) the state at `path`.
    public init(path: String) throws(Failure) {
        self.path = path
        spare = SpareSpace(beside: path)
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty, let problem = StatePermissions.makeFolder(folder) {
            throw Failure(message: problem)
        }
        // Made the owner's alone before SQLite opens it: SQLite gives the -wal
        // and -shm files the mode of the database file.
        StatePermissions.createPrivate(path)
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
            // A dlpipe state (checked above): older files were made 0644.
            StatePermissions.tighten(database: path)
            try db.query("SELECT value FROM dlpipe_meta WHERE key = 'credential_key'") { credentials = StoredCredentials(hex: $0.text(0) ?? "") }
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

    // MARK: writes (batched)

    /// The failure of a statement, worded for people.
    private func failure(_ what: String, _ error: SQLiteDatabase.Failure) -> StateFailure {
        StateFailure(message: "cannot \(what) the state file \(path): \(error.message)")
    }

    private func begin() throws(StateFailure) {
        if !inTransaction {
            // Prepared once like every other statement: sqlite3_exec would parse
            // BEGIN and COMMIT again on every loop turn.
            do { try db.query("BEGIN IMMEDIATE") } catch { throw failure("write", error) }
            inTransaction = true
        }
    }

    /// Commits the batch. A failed commit (a full disk) is rolled back, so
    /// that the connection is not left inside a transaction every later write
    /// would trip over, and reported: none of the batch is on disk.
    package func flush() throws(StateFailure) {
        guard inTransaction else { return }
        inTransaction = false
        do {
            try db.query("COMMIT")
        } catch {
            rollBack()
            throw failure("commit", error)
        }
    }

    /// Ends a failed batch. The statement that failed is what is reported; a
    /// rollback that fails too has nothing of the batch left to lose.
    private func rollBack() {
        inTransaction = false
        do { try db.execute("ROLLBACK") } catch {}
    }

    /// Writes records and released files and commits them as one batch.
    package func write(_ records: [DownloadRecord], released: [ReleasedFile]) throws(StateFailure) {
        guard !records.isEmpty || !released.isEmpty else { return }
        do {
            for record in records { try save(record) }
            for file in released { try release(file) }
        } catch {
            rollBack()
            throw error
        }
        try flush()
    }

    /// Writes (inserts or replaces) a download's record into the batch.
    package func save(_ r: DownloadRecord) throws(StateFailure) {
        try begin()
        let values: [SQLValue] = [
            .text(credentials.url(r.url)), SQLValue(r.target), .text(r.status.rawValue), .int(r.bytes),
            SQLValue(r.total), SQLValue(r.etag), SQLValue(r.lastModified), SQLValue(r.sha256),
            .int(Int64(r.attempts)), SQLValue(r.lastError), .real(Date().timeIntervalSince1970),
            SQLValue(r.mediaType), SQLValue(r.placed?.path), SQLValue(r.placed?.size),
            SQLValue(r.placed?.inode.map { Int64(bitPattern: $0) }), SQLValue(r.placed?.modified), SQLValue(r.segments),
            .text(credentials.key(r.key)),
        ]
        // An UPDATE in place when the record exists (every download's second
        // write): INSERT OR REPLACE would delete and re-insert the row and both
        // of its index entries.
        do throws(SQLiteDatabase.Failure) {
            try db.query("""
                UPDATE downloads SET url = ?, target = ?, status = ?, bytes = ?, total = ?, etag = ?,
                last_modified = ?, sha256 = ?, attempts = ?, last_error = ?, updated_at = ?, media_type = ?,
                placed_target = ?, placed_size = ?, placed_inode = ?, placed_mtime_ns = ?, segments = ?
                WHERE key = ?
                """, values)
            if db.changes == 0 {
                try db.query("""
                    INSERT INTO downloads
                    (url, target, status, bytes, total, etag, last_modified, sha256, attempts, last_error, updated_at,
                     media_type, placed_target, placed_size, placed_inode, placed_mtime_ns, segments, key)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, values)
            }
        } catch {
            throw failure("write", error)
        }
    }

    /// Remembers a file the state placed and no longer tracks (batched).
    package func release(_ file: ReleasedFile) throws(StateFailure) {
        try begin()
        do {
            try db.query("INSERT OR REPLACE INTO released(path, url, size) VALUES (?, ?, ?)",
                         [.text(file.path), .text(credentials.url(file.url)), .int(file.size)])
        } catch {
            throw failure("write", error)
        }
    }

    /// Runs `statements` as one committed batch of their own.
    func committed(_ statements: () throws(SQLiteDatabase.Failure) -> Void) throws(StateFailure) {
        try begin()
        do {
            try statements()
        } catch {
            rollBack()
            throw failure("write", error)
        }
        try flush()
    }

    /// Starts a run record; returns its id.
    package func startRun() throws(StateFailure) -> Int64 {
        var id: Int64 = 0
        try committed { () throws(SQLiteDatabase.Failure) in
            try db.query("INSERT INTO runs(started_at, pid) VALUES (?, ?)", [.real(Date().timeIntervalSince1970), .int(Int64(getpid()))])
            try db.query("SELECT last_insert_rowid()") { id = $0.int(0) ?? 0 }
        }
        spare.reserve()
        return id
    }

    /// Frees the space kept for the run's last commit; whether there was any.
    package func releaseSpareSpace() -> Bool {
        spare.release()
    }

    /// Ends a run record with its counts.
    package func endRun(_ id: Int64, summary: RunSummary) throws(StateFailure) {
        try committed { () throws(SQLiteDatabase.Failure) in
            try db.query("UPDATE runs SET ended_at = ?, finished = ?, failed = ?, unchanged = ? WHERE id = ?",
                         [.real(Date().timeIntervalSince1970), .int(Int64(summary.finished)), .int(Int64(summary.failed)),
                          .int(Int64(summary.unchanged)), .int(id)])
        }
        spare.release()
    }

    // MARK: reads

    /// Runs a query, its failure worded for people.
    func read(_ sql: String, _ values: [SQLValue] = [], _ row: (SQLRow) -> Void) throws(StateFailure) {
        do { try db.query(sql, values, row: row) } catch { throw failure("read", error) }
    }

    /// The record of a request, if any.
    package func record(key: String) throws(StateFailure) -> DownloadRecord? {
        var found: DownloadRecord?
        try read("SELECT \(Self.columns) FROM downloads WHERE key = ?", [.text(credentials.key(key))]) { found = Self.record($0) }
        found?.key = key
        return found
    }

    /// Every record, optionally of one status.
    package func records(status: DownloadRecord.Status? = nil) throws(StateFailure) -> [DownloadRecord] {
        var all: [DownloadRecord] = []
        let filter = status.map { " WHERE status = '\($0.rawValue)'" } ?? ""
        try read("SELECT \(Self.columns) FROM downloads\(filter) ORDER BY updated_at") { all.append(Self.record($0)) }
        return all
    }

    /// Files the state placed and no longer tracks: released by their
    /// downloads, and not placed again since by any download.
    package func releasedFiles() throws(StateFailure) -> [ReleasedFile] {
        var all: [ReleasedFile] = []
        try read("""
            SELECT path, url, size FROM released
            WHERE path NOT IN (SELECT placed_target FROM downloads WHERE placed_target IS NOT NULL)
            ORDER BY path
            """) { all.append(ReleasedFile(path: $0.text(0) ?? "", url: $0.text(1) ?? "", size: $0.int(2) ?? 0)) }
        return all
    }

    /// The last `limit` runs, newest first.
    package func runs(limit: Int) throws(StateFailure) -> [RunRecord] {
        var all: [RunRecord] = []
        try read("SELECT id, started_at, ended_at, pid, finished, failed, unchanged FROM runs ORDER BY id DESC LIMIT ?", [.int(Int64(limit))]) { row in
            all.append(RunRecord(id: row.int(0) ?? 0, startedAt: row.real(1) ?? 0, endedAt: row.real(2), pid: row.int(3) ?? 0,
                                 finished: row.int(4) ?? 0, failed: row.int(5) ?? 0, unchanged: row.int(6) ?? 0))
        }
        return all
    }

    /// A `dl.store` value (JSON text), if set.
    package func value(_ key: String) throws(StateFailure) -> String? {
        var found: String?
        try read("SELECT value FROM store WHERE key = ?", [.text(key)]) { found = $0.text(0) }
        return found
    }

    /// Sets a `dl.store` value (JSON text), committed at once.
    package func setValue(_ key: String, _ json: String) throws(StateFailure) {
        try committed { () throws(SQLiteDatabase.Failure) in
            try db.query("INSERT OR REPLACE INTO store(key, value) VALUES (?, ?)", [.text(key), .text(json)])
        }
    }

    /// Bytes the `dl.store` rows whose keys start with `prefix` take (keys and values).
    package func storedBytes(keyPrefix prefix: String) throws(StateFailure) -> Int {
        var total = 0
        try read("SELECT coalesce(sum(length(CAST(key AS BLOB)) + length(CAST(value AS BLOB))), 0) FROM store WHERE substr(CAST(key AS BLOB), 1, ?) = CAST(? AS BLOB)",
                      [.int(Int64(prefix.utf8.count)), .text(prefix)]) { total = Int($0.int(0) ?? 0) }
        return total
    }

    private static let columns = "key, url, target, status, bytes, total, etag, last_modified, sha256, attempts, last_error, updated_at, media_type, placed_target, placed_size, placed_inode, placed_mtime_ns, segments"

    private static func record(_ row: SQLRow) -> DownloadRecord {
        DownloadRecord(
            key: row.text(0) ?? "", url: row.text(1) ?? "", target: row.text(2),
            status: DownloadRecord.Status(rawValue: row.text(3) ?? "") ?? .failed, bytes: row.int(4) ?? 0,
            total: row.int(5), etag: row.text(6), lastModified: row.text(7), sha256: row.text(8),
            mediaType: row.text(12), attempts: Int(row.int(9) ?? 0), lastError: row.text(10),
            updatedAt: row.real(11) ?? 0,
            placed: row.text(13).map {
                PlacedFile(path: $0, size: row.int(14) ?? 0, inode: row.int(15).map { UInt64(bitPattern: $0) }, modified: row.int(16))
            }, segments: row.text(17))
    }
}
