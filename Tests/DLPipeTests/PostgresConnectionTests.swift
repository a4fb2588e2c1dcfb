import Foundation
import Testing
import TestSupport

@testable import DLPipe
@testable import DLPipeQueue

/// The typed libpq wrapper against a real server (the test process's
/// throwaway cluster, a fresh database per test).
@Suite struct PostgresConnectionTests {
    let cluster: PostgresCluster
    let url: String

    init() throws {
        cluster = try PostgresCluster.shared()
        url = try cluster.freshDatabase("conn")
    }

    @Test func parametersRoundTripAsTypedValues() throws {
        let connection = try PostgresConnection(PostgresAddress(url))
        let text = "it's \"quoted\", {braced}, NULL, back\\slash, ünïcødé 🚀"
        let bytes: [UInt8] = [0, 1, 0x5C, 0x22, 0xFF, 0]
        let result = try connection.execute(
            """
            SELECT $1::text AS text, $2::bigint AS number, $3::text AS nothing, $4::boolean AS flag,
                   $5::float8 AS real, $6::bytea AS bytes,
                   array_length($7::text[], 1) AS items, ($7::text[])[2] AS second, ($7::text[])[3] IS NULL AS third_null,
                   ($8::bigint[])[3] AS third_int, ($9::bytea[])[1] AS first_bytes
            """,
            [.text(text), .int(-9_007_199_254_740_993), .null, .bool(true), .double(0.25), .bytes(bytes),
             .textArray(["a,b", text, nil]), .intArray([1, 2, 3]), .bytesArray([bytes])])
        let row = try #require(result.rows.first)
        #expect(try row.text("text") == text)
        #expect(try row.int("number") == -9_007_199_254_740_993)
        #expect(try row.optionalText("nothing") == nil)
        #expect(try row.bool("flag"))
        #expect(try row.double("real") == 0.25)
        #expect(try row.bytes("bytes") == bytes)
        #expect(try row.int("items") == 3)
        #expect(try row.text("second") == text)
        #expect(try row.bool("third_null"))
        #expect(try row.int("third_int") == 3)
        #expect(try row.bytes("first_bytes") == bytes)
    }

    @Test func rowsAndAffectedCounts() throws {
        let connection = try PostgresConnection(PostgresAddress(url))
        try connection.run("CREATE TABLE t(id bigint PRIMARY KEY, name text); CREATE INDEX ON t(name)")
        let inserted = try connection.execute(
            "INSERT INTO t SELECT * FROM unnest($1::bigint[], $2::text[])", [.intArray([1, 2, 3]), .textArray(["a", "b", nil])])
        #expect(inserted.affected == 3)
        let rows = try connection.execute("SELECT id, name FROM t ORDER BY id").rows
        #expect(try rows.map { try $0.int("id") } == [1, 2, 3])
        #expect(try rows.map { try $0.optionalText("name") } == ["a", "b", nil])
        // A value of another type, a NULL where one is required, an unknown
        // column: each an error naming the column, never a zero.
        #expect(throws: PostgresError.self) { try rows[0].int("name") }
        #expect(throws: PostgresError.self) { try rows[2].text("name") }
        #expect(throws: PostgresError.self) { try rows[0].text("missing") }
        let updated = try connection.execute("UPDATE t SET name = 'z' WHERE id >= $1", [.int(2)])
        #expect(updated.affected == 2)
    }

    @Test func keyValueAddressesConnectToo() throws {
        let database = try #require(URL(string: url)?.path.dropFirst())
        let connection = try PostgresConnection(
            PostgresAddress("host=\(cluster.folder) dbname=\(database) user=\(PostgresCluster.user)"))
        #expect(try connection.execute("SELECT current_database() AS db").rows[0].text("db") == String(database))
    }

    @Test func serverErrorsCarryMessageAndSQLState() throws {
        let connection = try PostgresConnection(PostgresAddress(url))
        try connection.run("CREATE TABLE u(k text PRIMARY KEY)")
        try connection.execute("INSERT INTO u VALUES ($1)", [.text("x")])
        let duplicate = #expect(throws: PostgresError.self) { try connection.execute("INSERT INTO u VALUES ($1)", [.text("x")]) }
        #expect(duplicate?.kind == .statement)
        #expect(duplicate?.sqlState == "23505")
        #expect(duplicate?.message.contains("duplicate key") == true)
        #expect(duplicate?.description.contains("\n") == false)
        let syntax = #expect(throws: PostgresError.self) { try connection.execute("SELEC 1") }
        #expect(syntax?.sqlState == "42601")
        // The connection is still good after a refused statement.
        #expect(try connection.execute("SELECT 1 AS one").rows[0].int("one") == 1)
    }

    @Test func aTransactionRollsBackWhenItsBodyThrows() throws {
        let connection = try PostgresConnection(PostgresAddress(url))
        try connection.run("CREATE TABLE v(k text PRIMARY KEY)")
        #expect(throws: PostgresError.self) {
            try connection.transaction { () throws(PostgresError) in
                try connection.execute("INSERT INTO v VALUES ('kept?')")
                try connection.execute("INSERT INTO v VALUES ('kept?')")
            }
        }
        #expect(try connection.execute("SELECT count(*) AS n FROM v").rows[0].int("n") == 0)
    }

    @Test func textWithNULIsRefusedBeforeTheServer() throws {
        let connection = try PostgresConnection(PostgresAddress(url))
        let error = #expect(throws: PostgresError.self) { try connection.execute("SELECT $1::text", [.text("a\u{0}b")]) }
        #expect(error?.message.contains("NUL") == true)
    }

    @Test func anUnreachableServerIsAOneLineConnectionError() throws {
        let missing = try TempDir.make("pg-none")
        let error = #expect(throws: PostgresError.self) {
            try PostgresConnection(PostgresAddress("postgresql://nobody:hunter2@/db?host=\(missing)"))
        }
        #expect(error?.kind == .connection)
        #expect(error?.message.hasPrefix("cannot connect to postgresql://nobody:***@/db") == true)
        #expect(error?.message.contains("hunter2") == false)
        #expect(error?.message.contains("\n") == false)
    }

    @Test(arguments: [
        "mysql://db.example/jobs", "jobs", "http://db.example/", "postgresql://db.example:notaport/jobs",
        "postgresql://db.example:70000/jobs", "host=db.example port=0", "postgresql://a:hunter2@h:x/db", "dbname='unclosed",
    ])
    func malformedAddressesAreRefusedBeforeAnyConnection(_ text: String) {
        let error = #expect(throws: PostgresError.self) { try PostgresAddress(text) }
        #expect(error?.kind == .badAddress)
        #expect(error?.message.contains("hunter2") == false)
    }

    @Test func passwordsAreHiddenInTheAddressShown() throws {
        #expect(try PostgresAddress("postgresql://u:pw@h/db").description == "postgresql://u:***@h/db")
        #expect(try PostgresAddress("postgresql://u@h/db?password=pw&sslmode=require").description
            == "postgresql://u@h/db?password=***&sslmode=require")
        #expect(try PostgresAddress("host=h password=pw dbname=d").description == "host=h password=*** dbname=d")
        #expect(try PostgresAddress("host=h password='p w\\'x' dbname=d").description == "host=h password=*** dbname=d")
    }

    @Test func listenReceivesNotificationsFromOtherConnections() throws {
        let listener = try PostgresConnection(PostgresAddress(url))
        let sender = try PostgresConnection(PostgresAddress(url))
        try listener.listen("dlpipe work")
        // Nothing yet: the wait ends at its timeout, empty.
        let started = Date()
        #expect(try listener.notifications(waitingUpTo: 0.2).isEmpty)
        #expect(Date().timeIntervalSince(started) >= 0.15)
        // Two in one transaction come together; a third, later, alone.
        try sender.transaction { () throws(PostgresError) in
            try sender.execute("SELECT pg_notify($1, $2)", [.text("dlpipe work"), .text("job 1")])
            try sender.execute("SELECT pg_notify($1, $2)", [.text("dlpipe work"), .text("job 2")])
        }
        var received = try listener.notifications(waitingUpTo: 10)
        if received.count < 2 { received += try listener.notifications(waitingUpTo: 10) }
        #expect(received.map(\.payload) == ["job 1", "job 2"])
        #expect(received.allSatisfy { $0.channel == "dlpipe work" && $0.senderPID == sender.serverPID })
        try sender.execute("NOTIFY \(try sender.quotedIdentifier("dlpipe work")), 'late'")
        #expect(try listener.notifications(waitingUpTo: 10).map(\.payload) == ["late"])
    }

    @Test func aSessionRunsWorkOnItsQueueAndReconnectsAfterABreak() async throws {
        let session = PostgresSession(try PostgresAddress(url), label: "dlpipe-test-pg")
        let firstPID = try await session.perform { connection throws(PostgresError) in connection.serverPID }
        #expect(await session.connectionGeneration() == 1)
        // The server ends our backend, as a restart or a dropped network would.
        let other = try PostgresConnection(PostgresAddress(url))
        try other.execute("SELECT pg_terminate_backend($1)", [.int(Int64(firstPID))])
        let broken = await #expect(throws: PostgresError.self) {
            try await session.perform { connection throws(PostgresError) in try connection.execute("SELECT 1") }
        }
        #expect(broken?.kind == .connection)
        let secondPID = try await session.perform { connection throws(PostgresError) in
            try connection.execute("SELECT pg_backend_pid() AS pid").rows[0].int("pid")
        }
        #expect(secondPID != Int64(firstPID))
        #expect(await session.connectionGeneration() == 2)
    }
}
