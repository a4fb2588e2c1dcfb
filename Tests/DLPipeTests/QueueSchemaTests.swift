import Foundation
import Testing
import TestSupport

@testable import DLPipe
@testable import DLPipeQueue

/// The shared queue's schema: created from nothing, migrated step by step,
/// refused when a newer dlpipe migrated it.
@Suite struct QueueSchemaTests {
    let url: String

    init() throws {
        url = try PostgresCluster.shared().freshDatabase("schema")
    }

    private func connect() throws -> PostgresConnection { try PostgresConnection(PostgresAddress(url)) }

    private func version(_ connection: PostgresConnection) throws -> Int64 {
        try connection.execute("SELECT version FROM dlpipe.schema_version").rows[0].int("version")
    }

    private func tables(_ connection: PostgresConnection) throws -> Set<String> {
        Set(try connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'dlpipe'").rows.map { try $0.text("tablename") })
    }

    @Test func anEmptyDatabaseGetsTheWholeSchema() throws {
        let connection = try connect()
        let migrated = try SchemaMigrator().migrate(connection)
        #expect(migrated.from == 0)
        #expect(migrated.to == QueueSchema.latest)
        #expect(migrated.applied == Array(1...QueueSchema.latest))
        #expect(try version(connection) == Int64(QueueSchema.latest))
        #expect(try tables(connection).isSuperset(of: [
            "schema_version", "jobs", "runs", "workers", "hosts", "downloads", "url_facts", "store",
        ]))
        // Names are decided by the shared directory's no-clobber link, not by a table (version 12).
        #expect(try !tables(connection).contains("names"))
        // The claim's index holds ready rows only.
        let index = try connection.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'downloads_ready'").rows[0].text("indexdef")
        #expect(index.contains("WHERE (status = 'ready'::text)"))
        // A second start changes nothing.
        let again = try SchemaMigrator().migrate(connection)
        #expect(again.from == QueueSchema.latest && again.to == QueueSchema.latest && again.applied.isEmpty)
    }

    @Test func anOlderDatabaseIsMigratedStepByStep() throws {
        let connection = try connect()
        let first = SchemaMigration(version: 1, what: "one", sql: "CREATE TABLE dlpipe.first_step (n int)")
        let second = SchemaMigration(
            version: 2, what: "two", sql: "CREATE TABLE dlpipe.second_step (n int); INSERT INTO dlpipe.first_step VALUES (2)")
        try SchemaMigrator([first]).migrate(connection)
        #expect(try version(connection) == 1)
        #expect(try !tables(connection).contains("second_step"))
        let migrated = try SchemaMigrator([first, second]).migrate(connection)
        #expect(migrated.from == 1 && migrated.to == 2 && migrated.applied == [2])
        #expect(try version(connection) == 2)
        #expect(try tables(connection).contains("second_step"))
        // Step 1 did not run again.
        #expect(try connection.execute("SELECT count(*) AS n FROM dlpipe.first_step").rows[0].int("n") == 1)
    }

    @Test func aNewerDatabaseIsRefusedWithAClearError() throws {
        let connection = try connect()
        try SchemaMigrator().migrate(connection)
        try connection.execute("UPDATE dlpipe.schema_version SET version = $1", [.int(Int64(QueueSchema.latest + 1))])
        let error = #expect(throws: PostgresError.self) { try SchemaMigrator().migrate(connection) }
        #expect(error?.kind == .incompatible)
        #expect(error?.message.contains("version \(QueueSchema.latest + 1), newer than this dlpipe knows (\(QueueSchema.latest))") == true)
        #expect(try version(connection) == Int64(QueueSchema.latest + 1))
    }

    @Test func aFailingStepLeavesTheVersionBeforeIt() throws {
        let connection = try connect()
        let first = SchemaMigration(version: 1, what: "one", sql: "CREATE TABLE dlpipe.first_step (n int)")
        let broken = SchemaMigration(version: 2, what: "broken", sql: "CREATE TABLE dlpipe.half (n int); SELECT no_such_column FROM dlpipe.half")
        let error = #expect(throws: PostgresError.self) { try SchemaMigrator([first, broken]).migrate(connection) }
        #expect(error?.message.contains("cannot migrate the queue's schema to version 2 (broken)") == true)
        #expect(error?.sqlState == "42703")
        #expect(try version(connection) == 1)
        #expect(try !tables(connection).contains("half"))
    }

    @Test func workersStartingTogetherMigrateOnce() async throws {
        let url = url
        let results = try await within(seconds: 60, "four migrations at once") {
            await withTaskGroup(of: Result<[Int], PostgresError>.self) { group in
                for index in 0..<4 {
                    group.addTask {
                        let session = PostgresSession(try! PostgresAddress(url), label: "migrate-\(index)")
                        do throws(PostgresError) {
                            return .success(try await session.perform { connection throws(PostgresError) in
                                try SchemaMigrator().migrate(connection).applied
                            })
                        } catch {
                            return .failure(error)
                        }
                    }
                }
                var all: [Result<[Int], PostgresError>] = []
                for await result in group { all.append(result) }
                return all
            }
        }
        let applied = try results.map { try $0.get() }
        // Each step ran in one of them; the others found it done.
        #expect(applied.flatMap { $0 }.sorted() == Array(1...QueueSchema.latest))
        #expect(try version(connect()) == Int64(QueueSchema.latest))
    }
}

/// The payload of a Retry-After's hold, as the report sends it and the
/// listener reads it.
@Suite struct HeldPayloadTests {
    @Test func aHoldOfTheJobIsRead() {
        let held = QueueSchema.parseHeld("12 held 3.5 files.example.org", job: "12")
        #expect(held?.host == "files.example.org" && held?.seconds == 3.5)
    }

    @Test func othersAreNot() {
        #expect(QueueSchema.parseHeld("12", job: "12") == nil)
        #expect(QueueSchema.parseHeld("12 ended", job: "12") == nil)
        #expect(QueueSchema.parseHeld("121 held 3 h", job: "12") == nil)
        #expect(QueueSchema.parseHeld("13 held 3 h", job: "12") == nil)
        #expect(QueueSchema.parseHeld("12 held 0 h", job: "12") == nil)
        #expect(QueueSchema.parseHeld("12 held x h", job: "12") == nil)
        #expect(QueueSchema.parseHeld("12 held 3 ", job: "12") == nil)
    }
}
