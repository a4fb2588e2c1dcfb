import DLPipe

/// Claims ahead: downloads a worker holds before it has a host slot for them,
/// so that a transfer that ends hands its slot to the next one at once,
/// without waiting for the database (docs/design/queue-schema.md).
/// The slot moves in the worker; the next report records it (`taking`):
/// the row whose transfer ended gives its slot back and the one that
/// started takes it, in one statement, so `in_flight` never counts more
/// transfers than run.
extension SharedQueue {
    /// Claims up to `limit` ready downloads of `hosts` for `worker` without a
    /// host slot (running, `slot_host` NULL). Only where there is plenty to
    /// share: a host with fewer than twice `limit` ready downloads gives none
    /// ahead, so that the end of a job, or a few chained adds, stay for any
    /// worker with a free slot. Nothing with a host delay (each request must
    /// wait for the database's `next_at`), nothing from a host held back by
    /// a Retry-After, nothing for a worker declared dead.
    package func claimAhead(worker: Int64, hosts: [String], limit: Int, on connection: PostgresConnection) throws(PostgresError) -> [ClaimedDownload] {
        guard limit > 0, !hosts.isEmpty else { return [] }
        let rows = try connection.executePrepared(
            "dlpipe_claim_ahead",
            """
            WITH job AS (
              SELECT 1 FROM dlpipe.jobs j
              WHERE j.id = $1 AND j.host_delay = '0' AND j.paused_at IS NULL AND \(QueueSchema.openRunNotCancelled) AND EXISTS (
                SELECT 1 FROM dlpipe.workers w WHERE w.id = $2 AND w.job_id = $1 AND w.stopped_at IS NULL)
            ),
            plenty AS (
              SELECT h.host FROM job, dlpipe.hosts h
              WHERE h.job_id = $1 AND h.host = ANY($3::text[]) AND h.next_at <= now()
                AND (SELECT count(*) FROM (
                       SELECT 1 FROM dlpipe.downloads r
                       WHERE r.job_id = $1 AND r.host = h.host AND r.status = 'ready' AND r.run_at <= now()
                       LIMIT 2 * $4) ready) >= 2 * $4
            ),
            picked AS (
              SELECT d.id FROM plenty p
              CROSS JOIN LATERAL (
                SELECT d.id, d.priority, d.run_at FROM dlpipe.downloads d
                WHERE d.job_id = $1 AND d.host = p.host AND d.status = 'ready' AND d.run_at <= now()
                ORDER BY d.priority DESC, d.run_at, d.id
                LIMIT $4
                FOR UPDATE OF d SKIP LOCKED
              ) d
              ORDER BY d.priority DESC, d.run_at, d.id
              LIMIT $4
            ),
            claimed AS (
              UPDATE dlpipe.downloads d
              SET status = 'running', worker_id = $2, claim_token = nextval('dlpipe.claim_tokens'),
                  slot_host = NULL, ahead = true, claimed_at = now(), attempts = d.attempts + 1
              FROM picked p WHERE d.id = p.id
              RETURNING d.id, d.claim_token, d.key, d.url, d.host, d.priority, d.request::text AS request,
                        d.secret::text AS secret, d.attempts, d.run_at
            )
            -- In the order they wait in (ids follow the keys, not the adds).
            SELECT * FROM claimed ORDER BY priority DESC, run_at, id
            """, [.int(job), .int(worker), .textArray(hosts), .int(Int64(limit))]
        ).rows
        return try Self.claimed(rows)
    }

    /// Puts claims held ahead back to ready as they were: no attempt
    /// counted, their place in line (`run_at`) kept. Only rows still
    /// running under their token without a slot. Returns how many.
    @discardableResult
    package func releaseAhead(_ claims: [(id: Int64, token: Int64)], on connection: PostgresConnection) throws(PostgresError) -> Int {
        guard !claims.isEmpty else { return 0 }
        return Int(try connection.executePrepared(
            "dlpipe_release_ahead",
            """
            WITH back AS (
              UPDATE dlpipe.downloads d
              SET status = 'ready', worker_id = NULL, claim_token = NULL, ahead = false,
                  attempts = greatest(0, d.attempts - 1)
              FROM unnest($1::bigint[], $2::bigint[]) AS c(id, token)
              WHERE d.id = c.id AND d.claim_token = c.token AND d.slot_host IS NULL
              RETURNING d.id
            )
            SELECT count(*) AS n FROM back
            """, [.intArray(claims.map(\.id)), .intArray(claims.map(\.token))]
        ).rows[0].int("n"))
    }
}

extension SharedQueue {
    /// Gives host slots to claims held ahead (running under their tokens,
    /// no slot) while their hosts have room under the job's `per_host`, in
    /// the order given; the hosts' rows are locked, so the count is exact.
    /// For claims held ahead that no transfer of their worker will hand a
    /// slot to (its transfers of that host all ended). Returns the ids that
    /// got one: they may transfer now. None while the job is paused.
    package func promoteAhead(_ claims: [(id: Int64, token: Int64)], on connection: PostgresConnection) throws(PostgresError) -> Set<Int64> {
        guard !claims.isEmpty else { return [] }
        let rows = try connection.executePrepared(
            "dlpipe_promote_ahead",
            """
            WITH job AS (SELECT j.per_host FROM dlpipe.jobs j WHERE j.id = $1 AND j.paused_at IS NULL AND \(QueueSchema.openRunNotCancelled)),
            wanted AS (
              SELECT d.id, d.host, row_number() OVER (PARTITION BY d.host ORDER BY w.position) AS turn
              FROM unnest($2::bigint[], $3::bigint[]) WITH ORDINALITY AS w(id, token, position)
              CROSS JOIN LATERAL (
                SELECT d.id, d.host FROM dlpipe.downloads d
                WHERE d.id = w.id AND d.claim_token = w.token AND d.slot_host IS NULL
              ) d
            ),
            free AS (
              SELECT h.host, job.per_host - h.in_flight AS free FROM job, dlpipe.hosts h
              WHERE h.job_id = $1 AND h.host IN (SELECT host FROM wanted) AND h.next_at <= now()
              ORDER BY h.host
              FOR UPDATE OF h
            ),
            promoted AS (
              UPDATE dlpipe.downloads d SET slot_host = d.host, ahead = false
              FROM wanted w JOIN free f ON f.host = w.host
              WHERE d.id = w.id AND w.turn <= f.free
              RETURNING d.id, d.host
            ),
            slots AS (
              UPDATE dlpipe.hosts h SET in_flight = h.in_flight + c.n
              FROM (SELECT host, count(*)::int AS n FROM promoted GROUP BY host) c
              WHERE h.job_id = $1 AND h.host = c.host
            )
            SELECT id FROM promoted
            """, [.int(job), .intArray(claims.map(\.id)), .intArray(claims.map(\.token))]
        ).rows
        var promoted = Set<Int64>()
        for row in rows { promoted.insert(try row.int("id")) }
        return promoted
    }
}
