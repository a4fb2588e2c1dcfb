import Foundation
import Testing
import TestSupport

@testable import DLPipe
@testable import DLPipeQueue

/// A connection the server refused says why, by its SQLSTATE (a trial read
/// "cannot reach the queue" for a database that did not exist).
@Suite struct ServerRefusalTests {
    @Test func theCodeComesFromTheVerboseFormatNotTheWords() throws {
        // A server whose messages are in German: the code is found all the same.
        let text = """
            connection to server at "db.example" (10.0.0.5), port 5432 failed: FATAL:  28P01: Passwort-Authentifizierung für Benutzer »worker« fehlgeschlagen
            LOCATION:  auth_failed, auth.c:323

            """
        let refusal = try #require(ServerRefusal(verboseMessage: text))
        #expect(refusal.sqlState == "28P01")
        #expect(refusal.message == "connection to server at \"db.example\" (10.0.0.5), port 5432 failed: FATAL:  Passwort-Authentifizierung für Benutzer »worker« fehlgeschlagen\n")
        #expect(ServerRefusal.meaning(of: refusal.sqlState).hasPrefix("authentication failed"))
    }

    @Test func noServerNoRefusal() {
        let text = """
            connection to server on socket "/nowhere/.s.PGSQL.5432" failed: No such file or directory
            \tIs the server running locally and accepting connections on that socket?

            """
        #expect(ServerRefusal(verboseMessage: text) == nil)
    }

    /// Against the tests' server: the database missing, the role missing, a
    /// role without CONNECT. Each is a connection error (exit 4 at start)
    /// that carries its SQLSTATE, and the line names the cause.
    @Test func aRealServersRefusalsCarryTheirCodes() throws {
        let cluster = try PostgresCluster.shared()
        let url = try cluster.freshDatabase("refusal")
        // postgresql://USER@/DATABASE?host=FOLDER
        let database = String(url.split(separator: "@/")[1].split(separator: "?")[0])
        let admin = try PostgresConnection(PostgresAddress(url))
        let role = "nocon_\(UInt32.random(in: 0...UInt32.max))"
        try admin.run("CREATE ROLE \(role) LOGIN; REVOKE CONNECT ON DATABASE \(database) FROM PUBLIC")
        let cases = [
            (url.replacingOccurrences(of: "/\(database)?", with: "/nosuchdb_h11?"), "3D000", "the database does not exist"),
            (url.replacingOccurrences(of: "\(PostgresCluster.user)@", with: "nosuchrole@"), "28000", "no such role"),
            (url.replacingOccurrences(of: "\(PostgresCluster.user)@", with: "\(role)@"), "42501", "CONNECT privilege"),
        ]
        for (address, code, words) in cases {
            do {
                _ = try PostgresConnection(PostgresAddress(address))
                Issue.record("\(address) connected")
            } catch {
                #expect(error.kind == .connection)
                #expect(error.sqlState == code, "\(error)")
                #expect(error.unreachableMessage.hasPrefix("cannot reach the queue: "), "\(error.unreachableMessage)")
                #expect(error.unreachableMessage.contains("\(words)") && error.unreachableMessage.contains("(SQLSTATE \(code))"), "\(error.unreachableMessage)")
                #expect(!error.message.contains("LOCATION") && !error.message.contains("\n"), "\(error.message)")
            }
        }
        // A connection that works is back to libpq's default messages: a
        // statement's error is not verbose.
        #expect(throws: PostgresError.self) { try admin.run("SELECT * FROM no_such_table") }
    }
}
