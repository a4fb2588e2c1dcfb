import DLPipe
internal import CPostgres
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One libpq connection. Not thread-safe and not Sendable: a connection is
/// used by one thread only, in practice the serial queue of the
/// `PostgresSession` that owns it. Every call blocks that thread until the
/// server answers, which is why the engine thread never holds one.
package final class PostgresConnection {
    private let handle: OpaquePointer
    package let address: PostgresAddress

    /// Seconds libpq waits for a server before it gives up, unless the
    /// address says otherwise (`connect_timeout=`): without it an address
    /// whose host drops packets would wait for the kernel's TCP timeout.
    static let defaultConnectTimeout = 10

    /// Connects (blocking the calling thread) and checks that the server took us.
    package init(_ address: PostgresAddress, applicationName: String = "dlpipe") throws(PostgresError) {
        // Keywords are processed in order and later ones win: the defaults
        // come before `dbname`, so what the address itself says overrides them.
        let keywords = ["connect_timeout", "application_name", "client_encoding", "dbname"]
        let values = [String(Self.defaultConnectTimeout), applicationName, "UTF8", address.text]
        let connection = Self.withCStrings(keywords) { keywords in
            Self.withCStrings(values) { values in PQconnectStartParams(keywords, values, 1) }
        }
        guard let connection else { throw PostgresError(.connection, "cannot connect to \(address): out of memory") }
        if PQstatus(connection) != CONNECTION_BAD {
            // A refusal's SQLSTATE shows only in a verbose message (ServerRefusal),
            // and the verbosity can only be set once the connection exists:
            // PQreset then makes it again, blocking, with libpq's own host list
            // and connect_timeout, as PQconnectdbParams would.
            PQsetErrorVerbosity(connection, PQERRORS_VERBOSE)
            PQreset(connection)
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let text = String(cString: PQerrorMessage(connection))
            PQfinish(connection)
            let refusal = ServerRefusal(verboseMessage: text)
            throw PostgresError(.connection, "cannot connect to \(address): \(refusal?.message ?? text)", sqlState: refusal?.sqlState)
        }
        PQsetErrorVerbosity(connection, PQERRORS_DEFAULT)
        // NOTICEs ("relation already exists, skipping") would go to stderr.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        handle = connection
        self.address = address
    }

    deinit { PQfinish(handle) }

    /// Whether the connection still works as far as libpq knows (it learns of
    /// a break when a call fails).
    package var isOpen: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Whether a transaction is open (or aborted and not yet rolled back):
    /// a statement that failed in one cannot simply run again.
    package var inTransaction: Bool { PQtransactionStatus(handle) != PQTRANS_IDLE }

    /// The server process serving this connection (`pg_backend_pid()`).
    package var serverPID: Int32 { PQbackendPID(handle) }

    /// Runs one statement with `$1`, `$2`... bound to `parameters` (text
    /// format, never spliced into the SQL) and returns its rows. Several
    /// statements in one string are refused by the server here; `run` takes those.
    @discardableResult
    package func execute(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresResult {
        let encoded = try Self.encode(parameters)
        let result = Self.withOptionalCStrings(encoded) { values in
            PQexecParams(handle, sql, Int32(encoded.count), nil, values, nil, nil, 0)
        }
        return try take(result)
    }

    /// Runs SQL text that may hold several statements and no parameters
    /// (a migration step, BEGIN/COMMIT).
    package func run(_ sql: String) throws(PostgresError) {
        // PQexec returns the last statement's result; an earlier failure stops
        // the rest and is what comes back.
        _ = try take(PQexec(handle, sql))
    }

    /// Runs `body` in a transaction: COMMIT when it returns, ROLLBACK when it throws.
    package func transaction<T>(_ body: () throws(PostgresError) -> T) throws(PostgresError) -> T {
        try run("BEGIN")
        do {
            let value = try body()
            try run("COMMIT")
            return value
        } catch {
            // A broken connection cannot roll back; the server does when it notices.
            try? run("ROLLBACK")
            throw error
        }
    }

    /// `name` quoted as an identifier (for LISTEN, which takes no parameters).
    package func quotedIdentifier(_ name: String) throws(PostgresError) -> String {
        guard let quoted = PQescapeIdentifier(handle, name, name.utf8.count) else {
            throw failure("cannot quote \(name.debugDescription)")
        }
        defer { PQfreemem(quoted) }
        return String(cString: quoted)
    }

    /// Statements this connection has prepared, by name (`executePrepared`).
    private var prepared: Set<String> = []

    /// `execute` for a statement run many times: parsed and planned by the
    /// server once per connection (`PQprepare` under `name`, at first use),
    /// then only bound and run; a lookup by key takes a third of the time
    /// (60 to 130 microseconds instead of 150 to 380 on the tests' cluster).
    /// A new connection prepares it again, and so does this one when the
    /// server forgot it (`DISCARD ALL`, SQLSTATE 26000).
    @discardableResult
    package func executePrepared(_ name: String, _ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresResult {
        let encoded = try Self.encode(parameters)
        var again = false
        while true {
            if !prepared.contains(name) {
                _ = try take(PQprepare(handle, name, sql, Int32(encoded.count), nil))
                prepared.insert(name)
            }
            let result = Self.withOptionalCStrings(encoded) { values in
                PQexecPrepared(handle, name, Int32(encoded.count), values, nil, nil, 0)
            }
            do {
                return try take(result)
            } catch where error.sqlState == "26000" && !again {
                prepared.remove(name)
                again = true
            }
        }
    }

    // MARK: LISTEN/NOTIFY

    /// Starts listening on `channel` (a NOTIFY's first argument).
    package func listen(_ channel: String) throws(PostgresError) {
        try run("LISTEN " + quotedIdentifier(channel))
    }

    /// Waits until notifications arrive or `seconds` pass, and returns those
    /// that arrived (none after a timeout). Only a connection that does
    /// nothing else should wait here: it sleeps in poll(2) on the socket,
    /// then reads what came with `PQconsumeInput`.
    package func notifications(waitingUpTo seconds: Double) throws(PostgresError) -> [PostgresNotification] {
        // Notifications that arrived with an earlier statement's answer are already buffered.
        var received = drainNotifications()
        guard received.isEmpty else { return received }
        let socket = PQsocket(handle)
        guard socket >= 0 else { throw failure("the connection to \(address) is closed") }
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, seconds) * 1e9)
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            let left = deadline > now ? Int32(min((deadline - now) / 1_000_000, UInt64(Int32.max))) : 0
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, left)
            if ready < 0 {
                guard errno == EINTR else { throw PostgresError(.connection, "poll on the connection to \(address): \(String(cString: strerror(errno)))") }
                continue
            }
            if ready > 0 {
                guard PQconsumeInput(handle) == 1 else { throw failure("the connection to \(address) broke") }
                received = drainNotifications()
                if !received.isEmpty { return received }
            }
            if ready == 0 || left == 0 { return [] }
        }
    }

    private func drainNotifications() -> [PostgresNotification] {
        var received: [PostgresNotification] = []
        while let notify = PQnotifies(handle) {
            received.append(PostgresNotification(
                channel: String(cString: notify.pointee.relname),
                payload: notify.pointee.extra.map { String(cString: $0) } ?? "",
                senderPID: notify.pointee.be_pid))
            PQfreemem(notify)
        }
        return received
    }

    // MARK: results

    /// Copies a result's rows out and frees it, or turns it into an error.
    private func take(_ result: OpaquePointer?) throws(PostgresError) -> PostgresResult {
        guard let result else { throw failure("no answer from \(address)") }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            break
        default:
            let field = { (code: Character) -> String? in
                PQresultErrorField(result, Int32(code.asciiValue!)).map { String(cString: $0) }
            }
            let sqlState = field("C")
            // No SQLSTATE: libpq itself gave up (the connection broke mid-statement).
            guard let sqlState, let primary = field("M") else {
                throw PostgresError(.connection, String(cString: PQresultErrorMessage(result)).isEmpty
                    ? "the connection to \(address) broke" : String(cString: PQresultErrorMessage(result)))
            }
            let detail = field("D").map { ": " + $0 } ?? ""
            // 57P01 (admin shutdown) and 08xxx (connection exceptions) mean the server went away.
            let kind: PostgresError.Kind = sqlState.hasPrefix("08") || sqlState.hasPrefix("57P") ? .connection : .statement
            throw PostgresError(kind, primary + detail, sqlState: sqlState)
        }
        let columnCount = Int(PQnfields(result))
        let columns = PostgresColumns((0..<columnCount).map { String(cString: PQfname(result, Int32($0))) })
        var rows: [PostgresRow] = []
        let rowCount = Int(PQntuples(result))
        rows.reserveCapacity(rowCount)
        for row in 0..<rowCount {
            var values: [String?] = []
            values.reserveCapacity(columnCount)
            for column in 0..<columnCount {
                let (r, c) = (Int32(row), Int32(column))
                values.append(PQgetisnull(result, r, c) == 1 ? nil : String(cString: PQgetvalue(result, r, c)))
            }
            rows.append(PostgresRow(columns: columns, values: values))
        }
        return PostgresResult(columns: columns, rows: rows, affected: Int(String(cString: PQcmdTuples(result))) ?? 0)
    }

    private func failure(_ what: String) -> PostgresError {
        let message = String(cString: PQerrorMessage(handle))
        return PostgresError(.connection, message.isEmpty ? what : "\(what): \(message)")
    }

    // MARK: C strings

    /// `strings` and a NULL terminator (libpq's keyword and value arrays).
    private static func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> T) -> T {
        withOptionalCStrings(strings.map { Array($0.utf8) } + [nil], body)
    }

    /// The parameters' text forms, refused before the server when one holds
    /// a NUL (libpq would cut it there without a word).
    private static func encode(_ parameters: [PostgresValue]) throws(PostgresError) -> [[UInt8]?] {
        let encoded = parameters.map(\.encoded)
        for (index, value) in encoded.enumerated() where value?.contains(0) == true {
            throw PostgresError(.statement, "parameter $\(index + 1) holds a NUL character, which PostgreSQL text cannot store (send it as bytes)")
        }
        return encoded
    }

    /// libpq's parameter array: the values one after another in one buffer,
    /// each ended by a NUL, and a pointer to each (NULL for SQL NULL).
    private static func withOptionalCStrings<T>(_ values: [[UInt8]?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> T) -> T {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(values.reduce(0) { $0 + ($1?.count ?? 0) + 1 })
        var starts: [Int?] = []
        for value in values {
            guard let value else {
                starts.append(nil)
                continue
            }
            starts.append(buffer.count)
            buffer.append(contentsOf: value)
            buffer.append(0)
        }
        return buffer.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { text in
                let pointers: [UnsafePointer<CChar>?] = starts.map { $0.map { text.baseAddress! + $0 } }
                return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
            }
        }
    }
}
