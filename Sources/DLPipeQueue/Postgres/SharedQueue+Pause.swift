import DLPipe

/// Paused claims in the queue (schema version 13): a download a handler
/// paused is no work of the run's. Its row stays its worker's, under its
/// token (its end is reported as any claim's), but shows `paused`, so that
/// the run's look finds nothing running and the run can end: `done` runs,
/// then the worker ends its paused downloads as a run without a queue does
/// ("paused and never resumed").
extension SharedQueue {
    /// Marks running claims paused; the ids of those still running under
    /// their tokens (a claim taken back meanwhile is not marked).
    package func park(_ claims: [(id: Int64, token: Int64)], on connection: PostgresConnection) throws(PostgresError) -> Set<Int64> {
        try move(claims, from: "running", to: "paused", on: connection)
    }

    /// Marks paused claims running again: resumed in their worker's engine.
    package func unpark(_ claims: [(id: Int64, token: Int64)], on connection: PostgresConnection) throws(PostgresError) -> Set<Int64> {
        try move(claims, from: "paused", to: "running", on: connection)
    }

    /// Whether a download of the job is paused by a worker that fails it
    /// once the run ends ("paused and never resumed"): the run's default
    /// exit code counts it as failed, as a run without a queue does. A
    /// `--follow` worker keeps its paused downloads for a later run, so
    /// they fail nothing in this one.
    package func hasPaused(on connection: PostgresConnection) throws(PostgresError) -> Bool {
        try connection.execute(
            """
            SELECT EXISTS (
              SELECT 1 FROM dlpipe.downloads d JOIN dlpipe.workers w ON w.id = d.worker_id
              WHERE d.job_id = $1 AND d.status = 'paused' AND NOT w.follows) AS paused
            """, [.int(job)]
        ).rows[0].bool("paused")
    }

    private func move(
        _ claims: [(id: Int64, token: Int64)], from: String, to: String, on connection: PostgresConnection
    ) throws(PostgresError) -> Set<Int64> {
        guard !claims.isEmpty else { return [] }
        let rows = try connection.execute(
            """
            UPDATE dlpipe.downloads d SET status = $4
            FROM unnest($1::bigint[], $2::bigint[]) AS c(id, token)
            WHERE d.id = c.id AND d.claim_token = c.token AND d.status = $3
            RETURNING d.id
            """, [.intArray(claims.map(\.id)), .intArray(claims.map(\.token)), .text(from), .text(to)]
        ).rows
        var moved = Set<Int64>()
        for row in rows { moved.insert(try row.int("id")) }
        return moved
    }
}
