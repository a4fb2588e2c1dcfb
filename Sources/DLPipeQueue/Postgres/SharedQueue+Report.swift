import DLPipe
import Foundation

/// How claimed downloads ended: one statement per batch of reports.
extension SharedQueue {
    /// Reports how claimed downloads ended (or that they go back to ready
    /// for a retry), in one statement for the batch. Each report changes its
    /// row only while it is running under the report's token; only those
    /// give their host's slot back. Returns the ids whose reports were
    /// taken: a late report from a worker declared dead is not among them,
    /// and changed nothing.
    ///
    /// With `run`, the reports taken are added to the counts of `worker` in
    /// that run (`run_workers`), in the same statement (finished, unchanged,
    /// failed, handled, skipped, cancelled, bytes).
    package func report(_ reports: [ClaimReport], run: Int64? = nil, worker: Int64? = nil, on connection: PostgresConnection) throws(PostgresError) -> Set<Int64> {
        try report(reports, freeing: [], run: run, worker: worker, on: connection).taken
    }

    /// `report`, and the host slots of `freeing` given back in the same
    /// statement (`giveBack`): one statement locks the hosts rows in one
    /// order for both, so that two workers' transactions never lock a hosts
    /// row and the run's row in opposite orders (a deadlock, which
    /// PostgreSQL finds only after a second). `freeing` and `reports` must
    /// not share a row. Returns the ids of the reports taken and how many
    /// slots went back.
    ///
    /// `taking` are claims held ahead whose transfer started on a slot that
    /// a transfer of the same worker and host handed over (its row is in
    /// `freeing` or `reports`, or was in an earlier statement): each takes a
    /// slot here, so that the slot moves from one row to the other and the
    /// host's `in_flight` stays the same. `taking` shares no row with the others.
    func report(
        _ reports: [ClaimReport], freeing: [(id: Int64, token: Int64)], taking: [(id: Int64, token: Int64)] = [],
        run: Int64? = nil, worker: Int64? = nil, on connection: PostgresConnection
    ) throws(PostgresError) -> (taken: Set<Int64>, freed: Int) {
        guard !reports.isEmpty || !freeing.isEmpty || !taking.isEmpty else { return ([], 0) }
        let rows = try retryingDeadlocks(on: connection) { () throws(PostgresError) in
            try connection.executePrepared(
                "dlpipe_report",
                Self.reportStatement,
                [.int(job), .intArray(reports.map(\.id)), .intArray(reports.map(\.token)),
                 .textArray(reports.map(\.outcome.status)), .textArray(reports.map { String($0.outcome.delay) }),
                 .textArray(reports.map(\.error)), run.map { .int($0) } ?? .null,
                 .textArray(reports.map { $0.unchanged ? "t" : "f" }), .intArray(reports.map(\.bytes)),
                 .textArray(reports.map { String(max(0, $0.holdHost)) }),
                 .intArray(freeing.map(\.id)), .intArray(freeing.map(\.token)), .int(worker ?? 0),
                 .intArray(taking.map(\.id)), .intArray(taking.map(\.token))]
            ).rows
        }
        var taken = Set<Int64>()
        var freed = 0
        for row in rows {
            if try row.bool("ended") { taken.insert(try row.int("id")) } else { freed += 1 }
        }
        return (taken, freed)
    }

    /// `report`'s statement: the ends, the slots given back and taken over,
    /// the holds, the run's counts and the NOTIFYs, in one round trip.
    private static let reportStatement = """
        WITH input AS (
          SELECT * FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::float8[], $6::text[], $8::bool[], $9::bigint[], $10::float8[])
            AS t(id, token, status, delay, error, unchanged, bytes, hold)
        ),
        ended AS (
          -- An end lets the credentials go (a retry keeps them): a later
          -- run's add that queues the row again brings them back.
          UPDATE dlpipe.downloads d
          SET status = i.status, worker_id = NULL, claim_token = NULL, last_error = i.error, ahead = false,
              secret = CASE WHEN i.status = 'ready' THEN d.secret END,
              run_at = CASE WHEN i.status = 'ready' THEN now() + make_interval(secs => i.delay) ELSE d.run_at END,
              ended_at = CASE WHEN i.status = 'ready' THEN NULL ELSE now() END,
              -- Whose count the end went into: a retry of the failure takes it back there.
              ended_by = CASE WHEN i.status = 'ready' THEN d.ended_by ELSE nullif($13::bigint, 0) END
          FROM input i
          -- The row by its id alone: a token is running's (the table's
          -- check) and one claim's (a sequence of all jobs), so it says
          -- the job and the status too. Naming them here let the
          -- planner, without statistics (a new job's table), scan the
          -- job's whole key index and every running entry, dead ones
          -- included, in each report.
          WHERE d.id = i.id AND d.claim_token = i.token
          RETURNING d.id, d.slot_host, d.host
        ),
        -- Slots of transfers that ended, their files still to place
        -- (giveBack): locked first, so that the slot read is the one
        -- changed and a slot is never given back twice.
        holding AS (
          SELECT d.id, d.slot_host FROM dlpipe.downloads d
          JOIN unnest($11::bigint[], $12::bigint[]) AS f(id, token) ON f.id = d.id
          WHERE d.claim_token = f.token AND d.slot_host IS NOT NULL  -- by id alone, as in ended
          ORDER BY d.id
          FOR NO KEY UPDATE OF d
        ),
        freed AS (
          UPDATE dlpipe.downloads d SET slot_host = NULL FROM holding WHERE d.id = holding.id
          RETURNING d.id, holding.slot_host
        ),
        -- Claims held ahead that started on a slot handed over.
        took AS (
          UPDATE dlpipe.downloads d SET slot_host = d.host, ahead = false
          FROM unnest($14::bigint[], $15::bigint[]) AS t(id, token)
          WHERE d.id = t.id AND d.claim_token = t.token AND d.slot_host IS NULL
          RETURNING d.id, d.host
        ),
        -- A row whose transfer ended gave its slot back then (its
        -- slot_host is NULL, read under the row's lock): only the
        -- others give one back here. A server's Retry-After holds
        -- its host back for every worker, slot or not.
        slots AS (
          UPDATE dlpipe.hosts h SET in_flight = h.in_flight - c.n,
            next_at = CASE WHEN c.hold > 0 THEN greatest(h.next_at, now() + make_interval(secs => c.hold)) ELSE h.next_at END
          FROM (
            SELECT host, sum(n)::int AS n, max(hold) AS hold FROM (
              SELECT e.slot_host AS host, 1 AS n, 0::float8 AS hold FROM ended e WHERE e.slot_host IS NOT NULL
              UNION ALL
              SELECT f.slot_host, 1, 0 FROM freed f
              UNION ALL
              SELECT t.host, -1, 0 FROM took t
              UNION ALL
              SELECT e.host, 0, i.hold FROM ended e JOIN input i ON i.id = e.id WHERE i.hold > 0
            ) each GROUP BY host
          ) c
          WHERE h.job_id = $1 AND h.host = c.host
        ),
        -- Into this worker's own row of the run, not the run's one row:
        -- reports of different workers do not wait for each other.
        counted AS (
          INSERT INTO dlpipe.run_workers AS r (run_id, worker_id, finished, unchanged, failed, handled, skipped, cancelled, bytes)
          SELECT $7::bigint, $13::bigint, c.finished, c.unchanged, c.failed, c.handled, c.skipped, c.cancelled, c.bytes
          FROM (
            SELECT count(*) FILTER (WHERE i.status = 'finished' AND NOT i.unchanged) AS finished,
              count(*) FILTER (WHERE i.status = 'finished' AND i.unchanged) AS unchanged,
              count(*) FILTER (WHERE i.status = 'failed') AS failed,
              count(*) FILTER (WHERE i.status = 'handled') AS handled,
              count(*) FILTER (WHERE i.status = 'skipped') AS skipped,
              count(*) FILTER (WHERE i.status = 'cancelled') AS cancelled,
              coalesce(sum(i.bytes) FILTER (WHERE i.status = 'finished'), 0) AS bytes
            FROM ended e JOIN input i ON i.id = e.id
          ) c
          -- Slots given back alone, and retries, count nothing.
          WHERE $7::bigint IS NOT NULL AND EXISTS (SELECT 1 FROM ended e JOIN input i ON i.id = e.id WHERE i.status <> 'ready')
          ON CONFLICT (run_id, worker_id) DO UPDATE SET
            finished = r.finished + excluded.finished, unchanged = r.unchanged + excluded.unchanged,
            failed = r.failed + excluded.failed, handled = r.handled + excluded.handled,
            skipped = r.skipped + excluded.skipped, bytes = r.bytes + excluded.bytes,
            cancelled = r.cancelled + excluded.cancelled
        ),
        -- Slots came free: workers waiting for one look now, not at their next poll.
        notified AS (
          SELECT pg_notify('\(QueueSchema.workChannel)', $1::text)
          FROM (SELECT 1 FROM ended UNION ALL SELECT 1 FROM freed LIMIT 1) anything
        ),
        -- A Retry-After holds its host back for every worker: those
        -- holding claims ahead for it hear of it now.
        held AS (
          SELECT pg_notify('\(QueueSchema.workChannel)', $1::text || '\(QueueSchema.heldInfix)' || h.hold::text || ' ' || h.host)
          FROM (SELECT e.host, max(i.hold) AS hold FROM ended e JOIN input i ON i.id = e.id WHERE i.hold > 0 GROUP BY e.host) h
        )
        SELECT id, true AS ended, (SELECT count(*) FROM notified) + (SELECT count(*) FROM held) AS notified FROM ended
        UNION ALL
        SELECT id, false, 0 FROM freed
        """
}
