import DLPipe

/// Brings a database's `dlpipe` schema to the version this build knows, one
/// step a transaction, and refuses a database that a newer dlpipe migrated.
///
/// Workers that start together may all call it: each step takes a
/// transaction-scoped advisory lock first and reads the version again under
/// it, so a step runs once and the others find it done.
package struct SchemaMigrator: Sendable {
    package let migrations: [SchemaMigration]

    /// `migrations` must be numbered 1, 2, 3... (tests pass their own lists).
    package init(_ migrations: [SchemaMigration] = QueueSchema.migrations) {
        precondition(migrations.enumerated().allSatisfy { $0.offset + 1 == $0.element.version }, "migrations out of order")
        self.migrations = migrations
    }

    package var latest: Int { migrations.last?.version ?? 0 }

    /// The lock that serialises migrations in one database ("dlpipe" in ASCII).
    static let lockKey: Int64 = 0x646C_7069_7065

    /// Migrates; returns the version found, the version left, and the steps
    /// this call applied (none when another worker applied them meanwhile).
    @discardableResult
    package func migrate(_ connection: PostgresConnection) throws(PostgresError) -> (from: Int, to: Int, applied: [Int]) {
        let found = try connection.transaction { () throws(PostgresError) -> Int in
            try lock(connection)
            try connection.run("""
                CREATE SCHEMA IF NOT EXISTS dlpipe;
                CREATE TABLE IF NOT EXISTS dlpipe.schema_version (
                  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
                  version integer NOT NULL,
                  migrated_at timestamptz NOT NULL DEFAULT now()
                )
                """)
            return try version(connection)
        }
        var current = found
        var applied: [Int] = []
        for step in migrations where step.version > current {
            current = try retryingDeadlocks { () throws(PostgresError) -> Int in try connection.transaction { () throws(PostgresError) -> Int in
                try lock(connection)
                let now = try version(connection)
                guard now < step.version else { return now }  // another worker ran it
                do throws(PostgresError) {
                    try connection.run(step.sql)
                } catch {
                    throw PostgresError(error.kind, "cannot migrate the queue's schema to version \(step.version) (\(step.what)): \(error.message)", sqlState: error.sqlState)
                }
                try connection.execute(
                    """
                    INSERT INTO dlpipe.schema_version (version) VALUES ($1)
                    ON CONFLICT (only_row) DO UPDATE SET version = excluded.version, migrated_at = now()
                    """, [.int(Int64(step.version))])
                applied.append(step.version)
                return step.version
            } }
        }
        return (found, current, applied)
    }

    /// Runs `step`, again when PostgreSQL ended it as a deadlock (40P01, rolled
    /// back whole): a step that alters a table takes its strongest lock while a
    /// reader (`status --queue`, another worker's first query) may hold a weak
    /// one on another table it then asks for, and the deadlock detector ended
    /// the migration, so a worker started beside such a reader exited 1.
    private func retryingDeadlocks<T>(_ step: () throws(PostgresError) -> T) throws(PostgresError) -> T {
        var attempt = 1
        while true {
            do {
                return try step()
            } catch where error.sqlState == "40P01" && attempt < 5 {
                attempt += 1
            }
        }
    }

    /// The database's version (0 for a new one); refuses one newer than this build.
    private func version(_ connection: PostgresConnection) throws(PostgresError) -> Int {
        let rows = try connection.execute("SELECT version FROM dlpipe.schema_version").rows
        let version = try rows.first.map { row throws(PostgresError) in Int(try row.int("version")) } ?? 0
        try check(version: version)
        return version
    }

    /// Refuses a schema version newer than this build knows; an older one is
    /// fine (`migrate` brings it up). Also the judgement of readers that must
    /// not migrate (`QueueReport`).
    package func check(version: Int) throws(PostgresError) {
        guard version <= latest else {
            throw PostgresError(
                .incompatible,
                "the queue's schema is at version \(version), newer than this dlpipe knows (\(latest)): a newer dlpipe migrated it; upgrade dlpipe on this machine")
        }
    }

    private func lock(_ connection: PostgresConnection) throws(PostgresError) {
        try connection.execute("SELECT pg_advisory_xact_lock($1)", [.int(Self.lockKey)])
    }
}
