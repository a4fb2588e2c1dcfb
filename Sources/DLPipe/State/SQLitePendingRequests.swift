import Foundation
import Synchronization

/// `PendingRequests` in a scratch SQLite file beside the state: one table of
/// the queued requests, in add order (the download's number is the row id),
/// with a unique index of their keys for deduplication.
///
/// The file is made as `STATE.pending-PID-N` and unlinked at once: it holds
/// nothing the next run needs (a re-run adds its URLs again and resumes from
/// the state's records), so a crash leaves nothing behind, two engines never
/// share one, and its space returns when the engine ends. Nothing in it needs
/// to survive a crash, so it has no journal and no syncs. Credentials never
/// reach it (`PendingRule.storable`).
package final class SQLitePendingRequests: PendingRequests {
    private struct Connection: @unchecked Sendable {
        // @unchecked: used only under the mutex.
        let db: SQLiteDatabase
        /// Writes since the open transaction began.
        var writes = 0
    }
    private let connection: Mutex<Connection>
    /// Writes per transaction: one commit per write would cost a write of
    /// the changed pages each time; nothing reads the file but this object.
    private static let writesPerCommit = 4096
    private static let serial = Atomic<Int>(0)

    /// A new store beside the state file at `statePath` (nil path: SQLite's
    /// own temporary file, removed when closed).
    package init(besideState statePath: String?) throws(StateFailure) {
        let path = statePath.map {
            "\($0).pending-\(getpid())-\(SQLitePendingRequests.serial.add(1, ordering: .relaxed).newValue)"
        }
        do {
            let db = try SQLiteDatabase(path: path ?? "")
            if let path {
                // Unlinked before anything is written; SQLite keeps working
                // on the open file (no journal needs its name).
                unlink(path)
            }
            try db.execute("""
                PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;
                PRAGMA temp_store=FILE; PRAGMA cache_size=-4096;
                CREATE TABLE pending(
                    id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, url TEXT NOT NULL, name TEXT, directory TEXT,
                    sha256 TEXT, priority INTEGER NOT NULL, parent INTEGER, parent_engine INTEGER, timeout REAL,
                    max_size INTEGER, into_memory INTEGER NOT NULL, method TEXT, meta_json TEXT);
                BEGIN;
                """)
            connection = Mutex(Connection(db: db))
        } catch {
            throw StateFailure(message: "cannot make the file of queued downloads beside \(statePath ?? "the state"): \(error.message)")
        }
    }

    package func insert(_ number: Int, key: String, _ request: DownloadRequest) throws(StateFailure) -> Int? {
        try run { db throws(SQLiteDatabase.Failure) in
            try db.query(
                "INSERT OR IGNORE INTO pending VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [.int(Int64(number)), .text(key), .text(request.url), SQLValue(request.name), SQLValue(request.directory),
                 SQLValue(request.sha256), .int(Int64(request.priority)), SQLValue(request.parent.map { Int64($0.rawValue) }),
                 SQLValue(request.parent.map { Int64($0.engine) }), request.timeout.map { .real($0) } ?? .null,
                 SQLValue(request.maxSize), .int(request.into == .memory ? 1 : 0), SQLValue(request.method),
                 SQLValue(request.metaJSON)])
            if db.changes == 1 { return nil }
            return try Self.number(ofKey: key, db)
        }
    }

    package func number(ofKey key: String) throws(StateFailure) -> Int? {
        try run(writes: false) { db throws(SQLiteDatabase.Failure) in try Self.number(ofKey: key, db) }
    }

    private static func number(ofKey key: String, _ db: SQLiteDatabase) throws(SQLiteDatabase.Failure) -> Int? {
        var found: Int?
        try db.query("SELECT id FROM pending WHERE key = ?", [.text(key)]) { found = $0.int(0).map { Int($0) } }
        return found
    }

    package func request(_ number: Int) throws(StateFailure) -> DownloadRequest? {
        try requests(from: number, limit: 1).first { $0.number == number }?.request
    }

    package func requests(from number: Int, limit: Int) throws(StateFailure) -> [(number: Int, request: DownloadRequest)] {
        try run(writes: false) { db throws(SQLiteDatabase.Failure) in
            var found: [(number: Int, request: DownloadRequest)] = []
            try db.query(
                "SELECT id, url, name, directory, sha256, priority, parent, parent_engine, timeout, max_size, into_memory, method, meta_json FROM pending WHERE id >= ? ORDER BY id LIMIT ?",
                [.int(Int64(number)), .int(Int64(limit))]
            ) { row in
                var request = DownloadRequest(
                    url: row.text(1) ?? "", name: row.text(2), directory: row.text(3), sha256: row.text(4),
                    priority: Int(row.int(5) ?? 0),
                    parent: row.int(6).map { DownloadID(Int($0), engine: Int(row.int(7) ?? 0)) },
                    timeout: row.real(8), maxSize: row.int(9), into: row.int(10) == 1 ? .memory : .file)
                request.method = row.text(11)
                request.metaJSON = row.text(12)
                found.append((Int(row.int(0) ?? 0), request))
            }
            return found
        }
    }

    package func remove(_ number: Int) throws(StateFailure) {
        try run { db throws(SQLiteDatabase.Failure) in
            try db.query("DELETE FROM pending WHERE id = ?", [.int(Int64(number))])
        }
    }

    /// Runs `body` on the connection; a write commits the open transaction
    /// every `writesPerCommit` writes.
    private func run<T>(writes: Bool = true, _ body: (SQLiteDatabase) throws(SQLiteDatabase.Failure) -> T) throws(StateFailure) -> T {
        let result: Result<T, SQLiteDatabase.Failure> = connection.withLock { connection in
            do throws(SQLiteDatabase.Failure) {
                let value = try body(connection.db)
                if writes {
                    connection.writes += 1
                    if connection.writes >= Self.writesPerCommit {
                        connection.writes = 0
                        try connection.db.execute("COMMIT; BEGIN;")
                    }
                }
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let value): return value
        case .failure(let error): throw StateFailure(message: "the file of queued downloads: \(error.message)")
        }
    }
}
