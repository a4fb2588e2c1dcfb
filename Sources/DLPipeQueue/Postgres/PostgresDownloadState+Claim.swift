import DLPipe

extension PostgresDownloadState {
    /// One statement: of two workers claiming the same value at once, the
    /// second waits for the first's row lock, finds the value set, and
    /// changes nothing.
    package func claimValue(_ key: String, _ value: String) throws(StateFailure) -> Bool {
        try call("write the state") { connection throws(PostgresError) in
            !(try connection.execute(
                """
                INSERT INTO dlpipe.store (job_id, key, value) VALUES ($1, $2, $3)
                ON CONFLICT (job_id, key) DO UPDATE SET value = excluded.value
                  WHERE dlpipe.store.value IS DISTINCT FROM excluded.value
                RETURNING 1 AS changed
                """, [.int(job), .text(key), .text(value)]
            ).rows.isEmpty)
        }
    }
}
