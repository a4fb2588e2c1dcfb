import Foundation

/// The SQLite state of an output directory (`DIR/.dlpipe/state.db`, WAL). Writes
/// are batched into one transaction that `flush` commits: the engine flushes at
/// the end of each loop turn and before a part file is created, so a record
/// always exists for every part file on disk. synchronous=NORMAL: a commit
/// survives a killed process at once; a power loss may drop the last commits,
/// which the next run recognises from the files themselves.
package final class StateStore: DownloadState, @unchecked Sendable {
    // @unchecked: used by one thread at a time (the engine loop, or a command).
    private let db: SQLiteDatabase
    private var inTransaction = false
    /// False when the file held no download records when it was opened (a
    /// first run; see `StateWriter.record`).
    package private(set) var hadRecords = true
    public let path: String
    /// Space kept for the run's last commit (`SpareSpace`).
    private let spare: SpareSpace
    static let schemaVersion = 8
    /// How credentials in URLs are stored (never as they are).
    private var credentials = StoredCredentials(secret: [])
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
        // The secret that keys the digests of URLs' credentials; the rows that
        // held credentials are rewritten by `forgetCredentials`.
        5: "INSERT OR IGNORE INTO dlpipe_meta VALUES ('credential_key', '\(StoredCredentials.newSecretHex())');",
        // URLs fold their equivalent spellings and lose the fragment: the keys
        // are re-made in Swift (`renormalizeKeys`); no table changes.
        6: "",
        // The modification time of the placed file (nanoseconds), so that a
        // re-run tells a file the user changed from the one dlpipe left.
        // Older records have none until a run sees their file unchanged.
        7: "ALTER TABLE downloads ADD COLUMN placed_mtime_ns INTEGER;",
        // IDN hosts take their ASCII form (punycode): the keys of records
        // written with a Unicode host are re-made like schema 6's.
        8: "",
    ]

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
            var rewritten = 0
            while current < Self.schemaVersion {
                current += 1
                if let sql = Self.migrations[current], !sql.isEmpty { try db.execute(sql) }
                if current == 5 { rewritten = try forgetCredentials() }
                if current == 6 || current == 8 { try renormalizeKeys() }
                try db.execute("UPDATE dlpipe_meta SET value = '\(current)' WHERE key = 'schema_version';")
            }
            try db.execute("COMMIT;")
            if rewritten > 0 { try wipeFreedPages() }
        } catch {
            // The migration's error is the one to report. A rollback that fails
            // too leaves the transaction open: the connection goes with the store.
            do { try db.execute("ROLLBACK;") } catch {}
            throw error
        }
    }

    /// Rewrites the rows an older dlpipe stored with credentials in their URL
    /// (schema 5): the redacted URL, and the key with its keyed digest.
    /// Returns how many rows changed.
    private func forgetCredentials() throws -> Int {
        try db.query("SELECT value FROM dlpipe_meta WHERE key = 'credential_key'") { credentials = StoredCredentials(hex: $0.text(0) ?? "") }
        var rows: [(key: String, url: String)] = []
        try db.query("SELECT key, url FROM downloads WHERE instr(url, '@') > 0") { rows.append(($0.text(0) ?? "", $0.text(1) ?? "")) }
        var changed = 0
        for row in rows where credentials.key(row.key) != row.key || credentials.url(row.url) != row.url {
            try db.query("UPDATE OR REPLACE downloads SET key = ?, url = ? WHERE key = ?",
                         [.text(credentials.key(row.key)), .text(credentials.url(row.url)), .text(row.key)])
            changed += 1
        }
        var released: [(path: String, url: String)] = []
        try db.query("SELECT path, url FROM released WHERE instr(url, '@') > 0") { released.append(($0.text(0) ?? "", $0.text(1) ?? "")) }
        for file in released where credentials.url(file.url) != file.url {
            try db.query("UPDATE released SET url = ? WHERE path = ?", [.text(credentials.url(file.url)), .text(file.path)])
            changed += 1
        }
        return changed
    }

    /// Re-keys the records an older dlpipe keyed by URLs as they were written
    /// (schema 6), so that a re-run finds them under today's spelling
    /// (`URLNormalization`). Records that fold into one key: the newest stays;
    /// a file another one placed is kept as released, so `status` still lists
    /// it and its name stays taken.
    private func renormalizeKeys() throws {
        struct Row { let key: String; let url: String; let updated: Double; let placed: String?; let size: Int64? }
        var rows: [Row] = []
        try db.query("SELECT key, url, updated_at, placed_target, placed_size FROM downloads") {
            rows.append(Row(key: $0.text(0) ?? "", url: $0.text(1) ?? "", updated: $0.real(2) ?? 0, placed: $0.text(3), size: $0.int(4)))
        }
        let newest = Dictionary(grouping: rows) { DownloadRequest.renormalizedKey($0.key) }
            .mapValues { $0.max { $0.updated < $1.updated }!.key }
        // The folded-away records go first, so that a record's new key is free.
        for row in rows where newest[DownloadRequest.renormalizedKey(row.key)] != row.key {
            if let placed = row.placed {
                try db.query("INSERT OR IGNORE INTO released(path, url, size) VALUES (?, ?, ?)",
                             [.text(placed), .text(URLNormalization.normalize(row.url)), .int(row.size ?? 0)])
            }
            try db.query("DELETE FROM downloads WHERE key = ?", [.text(row.key)])
        }
        for row in rows where newest[DownloadRequest.renormalizedKey(row.key)] == row.key {
            let key = DownloadRequest.renormalizedKey(row.key)
            let url = URLNormalization.normalize(row.url)
            guard key != row.key || url != row.url else { continue }
            try db.query("UPDATE downloads SET key = ?, url = ? WHERE key = ?", [.text(key), .text(url), .text(row.key)])
        }
    }

    /// After credentials were rewritten, nothing of them may stay in freed
    /// pages of the file or in old frames of the WAL: VACUUM rebuilds the file
    /// and a truncating checkpoint empties the WAL.
    private func wipeFreedPages() throws {
        try db.execute("VACUUM;")
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE);")
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
            INSERT INTO dlpipe_meta VALUES ('credential_key', '\(StoredCredentials.newSecretHex())');
            CREATE TABLE downloads(
              key TEXT PRIMARY KEY, url TEXT NOT NULL, target TEXT, status TEXT NOT NULL,
              bytes INTEGER NOT NULL DEFAULT 0, total INTEGER, etag TEXT, last_modified TEXT,
              sha256 TEXT, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT,
              updated_at REAL NOT NULL, media_type TEXT,
              placed_target TEXT, placed_size INTEGER, placed_inode INTEGER, placed_mtime_ns INTEGER) WITHOUT ROWID;
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
            SQLValue(r.placed?.inode.map { Int64(bitPattern: $0) }), SQLValue(r.placed?.modified),
            .text(credentials.key(r.key)),
        ]
        // An UPDATE in place when the record exists (every download's second
        // write): INSERT OR REPLACE would delete and re-insert the row and both
        // of its index entries.
        do throws(SQLiteDatabase.Failure) {
            try db.query("""
                UPDATE downloads SET url = ?, target = ?, status = ?, bytes = ?, total = ?, etag = ?,
                last_modified = ?, sha256 = ?, attempts = ?, last_error = ?, updated_at = ?, media_type = ?,
                placed_target = ?, placed_size = ?, placed_inode = ?, placed_mtime_ns = ?
                WHERE key = ?
                """, values)
            if db.changes == 0 {
                try db.query("""
                    INSERT INTO downloads
                    (url, target, status, bytes, total, etag, last_modified, sha256, attempts, last_error, updated_at,
                     media_type, placed_target, placed_size, placed_inode, placed_mtime_ns, key)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
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
    private func committed(_ statements: () throws(SQLiteDatabase.Failure) -> Void) throws(StateFailure) {
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
    private func read(_ sql: String, _ values: [SQLValue] = [], _ row: (SQLRow) -> Void) throws(StateFailure) {
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

    // MARK: files that scripts wrote (dl.write, dl.append), each committed at once

    /// The job whose script wrote the file at `path` (relative to the output
    /// directory), or nil when no script did.
    package func writer(of path: String) throws(StateFailure) -> String? {
        var found: String?
        try read("SELECT job FROM written WHERE path = ?", [.text(path)]) { found = $0.text(0) }
        return found
    }

    /// Remembers that `job` wrote the file at `path`.
    package func setWriter(of path: String, to job: String) throws(StateFailure) {
        try committed { () throws(SQLiteDatabase.Failure) in
            try db.query("INSERT OR REPLACE INTO written(path, job) VALUES (?, ?)", [.text(path), .text(job)])
        }
    }

    /// Forgets the script-written file at `path` (it was removed).
    package func forgetWritten(_ path: String) throws(StateFailure) {
        try committed { () throws(SQLiteDatabase.Failure) in
            try db.query("DELETE FROM written WHERE path = ?", [.text(path)])
        }
    }

    /// Every download's file: the targets downloads have or had, the files
    /// the state placed, and those it placed and released (one scan).
    package func downloadFiles() throws(StateFailure) -> Set<String> {
        var all = Set<String>()
        try read("""
            SELECT target FROM downloads WHERE target IS NOT NULL
            UNION SELECT placed_target FROM downloads WHERE placed_target IS NOT NULL
            UNION SELECT path FROM released
            """) { if let path = $0.text(0) { all.insert(path) } }
        return all
    }

    /// True when `path` is a download's file (as `downloadFiles`). No index on
    /// these columns: each would cost the engine's every save; a script asks
    /// when it removes a file or is refused one.
    package func isDownloadFile(_ path: String) throws(StateFailure) -> Bool {
        var found = false
        try read("""
            SELECT 1 FROM downloads WHERE target = ?1 OR placed_target = ?1
            UNION ALL SELECT 1 FROM released WHERE path = ?1 LIMIT 1
            """, [.text(path)]) { _ in found = true }
        return found
    }

    /// Forgets the downloads whose file is `path` (a script removed it), so
    /// that the next run fetches them again.
    package func forgetDownloadFile(_ path: String) throws(StateFailure) {
        try committed { () throws(SQLiteDatabase.Failure) in
            try db.query("DELETE FROM downloads WHERE target = ?1 OR placed_target = ?1", [.text(path)])
            try db.query("DELETE FROM released WHERE path = ?", [.text(path)])
        }
    }

    private static let columns = "key, url, target, status, bytes, total, etag, last_modified, sha256, attempts, last_error, updated_at, media_type, placed_target, placed_size, placed_inode, placed_mtime_ns"

    private static func record(_ row: SQLRow) -> DownloadRecord {
        DownloadRecord(
            key: row.text(0) ?? "", url: row.text(1) ?? "", target: row.text(2),
            status: DownloadRecord.Status(rawValue: row.text(3) ?? "") ?? .failed, bytes: row.int(4) ?? 0,
            total: row.int(5), etag: row.text(6), lastModified: row.text(7), sha256: row.text(8),
            mediaType: row.text(12), attempts: Int(row.int(9) ?? 0), lastError: row.text(10),
            updatedAt: row.real(11) ?? 0,
            placed: row.text(13).map {
                PlacedFile(path: $0, size: row.int(14) ?? 0, inode: row.int(15).map { UInt64(bitPattern: $0) }, modified: row.int(16))
            })
    }
}
