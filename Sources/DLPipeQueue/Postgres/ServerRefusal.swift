import DLPipe
import Foundation

/// A server that answered a connection and refused it: its SQLSTATE and what
/// that means, in words a user can act on (a trial read "cannot reach the
/// queue" for a database that did not exist, and looked for a network fault).
///
/// libpq keeps no SQLSTATE of a failed connection where an API could read it
/// (it has no result to ask); the one place it shows is the message in
/// verbose form, "FATAL:  3D000: database "x" does not exist", so that is
/// what a connection asks for while it connects (`PostgresConnection.init`),
/// and this reads the code from that fixed format, never from the words,
/// which the server may give in another language.
package struct ServerRefusal: Sendable, Equatable {
    package let sqlState: String
    /// libpq's message without the code and the verbose LOCATION line.
    package let message: String

    /// The refusal in a verbose libpq connection message; nil when no server
    /// sent one (nothing listened, the network failed, a timeout).
    package init?(verboseMessage text: String) {
        var code: String?
        var lines: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = String(line)
            if Self.isLocation(line) { continue }
            // "SEVERITY:  CODE: primary": the severity is localised, the code never is.
            if code == nil, let range = line.range(of: #":  [0-9A-Z]{5}: "#, options: .regularExpression) {
                code = String(line[line.index(range.lowerBound, offsetBy: 3)..<line.index(range.upperBound, offsetBy: -2)])
                line.replaceSubrange(range, with: ":  ")
            }
            lines.append(line)
        }
        guard let code else { return nil }
        sqlState = code
        message = lines.joined(separator: "\n")
    }

    /// `LOCATION:  InitPostgres, postinit.c:885`, the server's source line
    /// that verbose messages add: of no use to a user.
    private static func isLocation(_ line: String) -> Bool {
        line.range(of: #"^[^ ]+:  [A-Za-z_0-9]+, [A-Za-z_0-9]+\.c:[0-9]+$"#, options: .regularExpression) != nil
    }

    /// What is wrong, by the SQLSTATE (PostgreSQL's appendix A).
    package static func meaning(of sqlState: String) -> String {
        switch sqlState {
        case "3D000": "the database does not exist"
        // The server says no more for a password login, so as not to tell
        // an attacker which roles exist.
        case "28P01": "authentication failed (a wrong password, or no such role)"
        case "28000": "the server refused this role or client (no such role, or no pg_hba.conf line lets it in)"
        case "42501": "the role may not connect to this database (it lacks the CONNECT privilege)"
        case "53300": "the server has no connection left for this role (max_connections or the role's limit)"
        case "57P03": "the server is starting up, shutting down or recovering"
        case "08004": "the server rejected the connection"
        default: "the server refused the connection"
        }
    }
}

extension PostgresError {
    /// The one line of a connection that could not be made at start (exit 4):
    /// what the server said was wrong when it refused us, else libpq's words.
    package var unreachableMessage: String {
        guard kind == .connection, let sqlState else { return "cannot reach the queue: \(message)" }
        return "cannot reach the queue: \(ServerRefusal.meaning(of: sqlState)) (SQLSTATE \(sqlState)): \(message)"
    }
}
