import DLPipe
import Foundation

/// A failure that PostgreSQL or libpq reported, in one line: the server's
/// primary message and its SQLSTATE when the server sent one (a failed
/// statement), libpq's message alone when there was no server to ask (a
/// connection that could not be made or broke).
package struct PostgresError: Error, Sendable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable {
        /// The `--queue` value is not a PostgreSQL address (a usage error).
        case badAddress
        /// No connection: the server cannot be reached, refused us, or the
        /// connection broke.
        case connection
        /// The server ran the statement and refused it (`sqlState` says why).
        case statement
        /// The database holds a dlpipe schema newer than this build knows.
        case incompatible
        /// An answer this code cannot read (a column missing, a value of
        /// another type): a bug, or a schema that is not ours.
        case unexpected
    }

    package let kind: Kind
    /// The message, on one line (libpq's messages span several).
    package let message: String
    /// The five-character SQLSTATE ("23505" unique violation, "40P01"
    /// deadlock, "57P01" admin shutdown), when the server sent one.
    package let sqlState: String?
    /// A link that gave up reconnecting (`ReconnectingConnection.run`): the
    /// last attempt's error, and how long it tried. A worker's own line
    /// about the outage says these, not the link's message, whose "tried
    /// for" is one statement's try (0.7 s of a heartbeat's, next to the
    /// 60 s the worker waited).
    package var lastError: String?
    package var triedFor: Double?

    package init(_ kind: Kind, _ message: String, sqlState: String? = nil) {
        self.kind = kind
        self.message = PostgresError.oneLine(message)
        self.sqlState = sqlState
    }

    package var description: String {
        sqlState.map { "\(message) (SQLSTATE \($0))" } ?? message
    }

    /// Whether running the same statement again may succeed: a deadlock or a
    /// serialization failure that the server broke by aborting us.
    package var isTransient: Bool {
        sqlState == "40P01" || sqlState == "40001"
    }

    /// SQLSTATE of a statement that waited longer than its `lock_timeout`.
    package static let lockNotAvailable = "55P03"

    /// Whether the same statement may succeed on a new connection: the
    /// connection broke (a server restart, a dropped network, a backend
    /// terminated by an administrator: SQLSTATE 08xxx and 57Pxx, or libpq
    /// giving up without one) or could not be made. A statement the server
    /// refused (a constraint, bad SQL) is not one: it would fail again.
    package var isConnectionLoss: Bool {
        kind == .connection
    }

    /// "connection to server ... failed: No such file or directory\n\tIs the
    /// server running locally ...?\n" as one line, its parts joined by "; ".
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
            .joined(separator: "; ")
    }
}
