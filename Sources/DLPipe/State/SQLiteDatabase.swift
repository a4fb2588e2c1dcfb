internal import CSQLite
#if canImport(Glibc)
import Glibc
#endif

/// A small typed wrapper over one SQLite connection. Used by one thread at a time.
final class SQLiteDatabase {
    private let handle: OpaquePointer
    let path: String
    /// Prepared statements by SQL text: the engine runs the same few per file,
    /// and preparing costs more than running them.
    private var statements: [String: OpaquePointer] = [:]

    /// An error from SQLite, with its message.
    struct Failure: Error, CustomStringConvertible {
        let code: Int32
        let message: String
        var description: String { message }
    }

    init(path: String) throws(Failure) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) + SQLiteDatabase.systemError($0) } ?? "out of memory"
            sqlite3_close(db)
            throw Failure(code: rc, message: "cannot open \(path): \(message)")
        }
        handle = db
        self.path = path
        sqlite3_busy_timeout(db, 5000)
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    /// Runs statements that return no rows.
    func execute(_ sql: String) throws(Failure) {
        var error: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &error)
        if rc != SQLITE_OK {
            let message = error.map { String(cString: $0) } ?? "error \(rc)"
            sqlite3_free(error)
            throw Failure(code: rc, message: "\(path): \(message)")
        }
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// A prepared statement, bound with `values`, stepped through its rows.
    func query(_ sql: String, _ values: [SQLValue] = [], row: (SQLRow) -> Void = { _ in }) throws(Failure) {
        let statement: OpaquePointer
        if let cached = statements[sql] {
            statement = cached
        } else {
            var prepared: OpaquePointer?
            guard sqlite3_prepare_v2(handle, sql, -1, &prepared, nil) == SQLITE_OK, let prepared else {
                throw failure()
            }
            statements[sql] = prepared
            statement = prepared
        }
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (index, value) in values.enumerated() {
            let slot = Int32(index + 1)
            switch value {
            case .null: sqlite3_bind_null(statement, slot)
            case .int(let n): sqlite3_bind_int64(statement, slot, n)
            case .real(let d): sqlite3_bind_double(statement, slot, d)
            case .text(let s):
                // The byte count, not -1: keys hold NUL separators, and SQLite
                // would stop at the first one.
                var copy = s
                _ = copy.withUTF8 { bytes in
                    bytes.withMemoryRebound(to: CChar.self) {
                        dl_sqlite_bind_text(statement, slot, $0.baseAddress, Int32($0.count))
                    }
                }
            }
        }
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw failure() }
            row(SQLRow(statement: statement))
        }
    }

    private func failure() -> Failure {
        Failure(code: sqlite3_errcode(handle), message: "\(path): \(String(cString: sqlite3_errmsg(handle)))" + SQLiteDatabase.systemError(handle))
    }

    /// " (the OS error)" behind SQLite's message when there was one: "unable to
    /// open database file" alone hides causes like "Too many open files".
    private static func systemError(_ db: OpaquePointer) -> String {
        let code = sqlite3_system_errno(db)
        return code == 0 ? "" : " (\(String(cString: strerror(code))))"
    }
}
