/// A host slot counts transfers, not claims (schema version 5): a claim takes
/// its host's slot, and gives it back when its transfer ends, while its file
/// still waits to be placed and reported. docs/scale-out.md, "Claims".
extension SharedQueue {
    /// Gives back the host slots of claims whose transfers ended, each under
    /// its claim's token: the row stays running under that token, its
    /// `slot_host` becomes NULL and its host's `in_flight` falls by one. A
    /// slot given back already, a claim taken back or ended meanwhile, or a
    /// token that is not the row's gives nothing back. Returns how many went.
    ///
    /// The rows are locked first (`FOR UPDATE`) so that the slot read is the
    /// one the update changes: a take-back that committed meanwhile is seen,
    /// and a slot is never given back twice.
    @discardableResult
    package func giveBack(_ slots: [(id: Int64, token: Int64)], on connection: PostgresConnection) throws(PostgresError) -> Int {
        guard !slots.isEmpty else { return 0 }
        return Int(try connection.executePrepared(
            "dlpipe_give_back",
            """
            WITH input AS (
              SELECT * FROM unnest($2::bigint[], $3::bigint[]) AS t(id, token)
            ),
            held AS (
              SELECT d.id, d.slot_host FROM dlpipe.downloads d JOIN input i ON i.id = d.id
              WHERE d.job_id = $1 AND d.claim_token = i.token AND d.status = 'running' AND d.slot_host IS NOT NULL
              ORDER BY d.id
              FOR UPDATE OF d
            ),
            freed AS (
              UPDATE dlpipe.downloads d SET slot_host = NULL FROM held WHERE d.id = held.id
              RETURNING held.slot_host
            ),
            slots AS (
              UPDATE dlpipe.hosts h SET in_flight = h.in_flight - c.n
              FROM (SELECT slot_host, count(*)::int AS n FROM freed GROUP BY slot_host) c
              WHERE h.job_id = $1 AND h.host = c.slot_host
            ),
            -- Workers waiting for a slot look now (one notification a
            -- transaction: the report's in the same one is the same).
            notified AS (
              SELECT pg_notify('\(QueueSchema.workChannel)', $1::text) FROM (SELECT 1 FROM freed LIMIT 1) anything
            )
            SELECT count(*) AS n, (SELECT count(*) FROM notified) AS notified FROM freed
            """, [.int(job), .intArray(slots.map(\.id)), .intArray(slots.map(\.token))]
        ).rows[0].int("n"))
    }
}
