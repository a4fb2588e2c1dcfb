import Foundation

/// The state file's tables: made for a new file, checked and migrated for an
/// older one (as `init` opens it).
extension StateStore {
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
        // A split download's segments (`start:next:end` triples), so that a
        // re-run resumes each where it stood (docs/design/split.md).
        9: "ALTER TABLE downloads ADD COLUMN segments TEXT;",
    ]

    /// The file's tables; throws unless it is new (no tables) or a dlpipe state
    /// of a version this build knows.
    func check() throws -> [String] {
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
    func create() throws {
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
              placed_target TEXT, placed_size INTEGER, placed_inode INTEGER, placed_mtime_ns INTEGER,
              segments TEXT) WITHOUT ROWID;
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
}
