import DLPipe

/// The statements of a run of a shared job (docs/design/queue-schema.md): a
/// run starts when a worker starts while none is open, and ends when nothing
/// was ready or running for the settle time; `done` runs once per run, in the
/// worker that takes it, with the counts every worker added to the run's row.
extension SharedQueue {
    /// The id of the job called `name`, made when there is none (its limits
    /// stay as they are): what `dl.store` needs before a worker starts.
    package static func jobID(named name: String, on connection: PostgresConnection) throws(PostgresError) -> Int64 {
        _ = try SchemaMigrator().migrate(connection)
        return try connection.execute(
            """
            INSERT INTO dlpipe.jobs (name) VALUES ($1)
            ON CONFLICT (name) DO UPDATE SET name = excluded.name RETURNING id
            """, [.text(name)]
        ).rows[0].int("id")
    }

    /// Ends the job's open run when no live worker but `worker` is in it: its
    /// workers were all stopped (Ctrl-C, kill) before it ended, and no one is
    /// left to end it. Its exit code is 130, as an interrupted run's; `done`
    /// does not run for it. Without this the next cron run would join it and
    /// skip what finished in it instead of asking for everything again.
    /// What the run still owed ends with it (`cancelled`, "its run was
    /// interrupted"): its ready and scheduled rows, and the claims of its
    /// dead workers. Left ready, the next run claimed them, whatever its own
    /// top level adds; it queues again what it adds (`enqueue`).
    /// Returns whether a run was ended.
    @discardableResult
    package func endOrphanedRun(except worker: Int64, on connection: PostgresConnection) throws(PostgresError) -> Bool {
        !(try connection.execute(
            """
            WITH ending AS (
              SELECT r.id FROM dlpipe.runs r
              WHERE r.job_id = $1 AND r.ended_at IS NULL
                AND NOT EXISTS (
                  SELECT 1 FROM dlpipe.workers w
                  WHERE w.run_id = r.id AND w.id <> $2 AND w.stopped_at IS NULL AND w.lease_until > now())
                -- A run `dlpipe queue retry` reopened waits for its first
                -- worker: orphaned only once a worker was in it since (and
                -- stopped, or its lease ran out).
                AND (r.reopened_at IS NULL OR EXISTS (
                  SELECT 1 FROM dlpipe.workers w
                  WHERE w.run_id = r.id AND coalesce(w.stopped_at, w.lease_until) >= r.reopened_at))
              FOR UPDATE OF r
            ),
            -- Claims are by row: a live worker (one of an older run that
            -- follows) keeps what it holds.
            owed AS (
              -- A ready row holds no slot, whatever slot_host a take-back left.
              -- Every ready row is the ending run's work, whichever run queued
              -- it (a --follow worker's download of an older run, resumed).
              SELECT d.id, CASE WHEN d.status <> 'ready' THEN d.slot_host END AS slot_host
              FROM dlpipe.downloads d, ending
              WHERE d.job_id = $1 AND (d.status = 'ready' OR (d.run_id = ending.id AND d.status IN ('running', 'paused') AND NOT EXISTS (
                SELECT 1 FROM dlpipe.workers w
                WHERE w.id = d.worker_id AND w.stopped_at IS NULL AND w.lease_until > now())))
              FOR NO KEY UPDATE OF d
            ),
            closed AS (
              UPDATE dlpipe.downloads d
              SET status = 'cancelled', worker_id = NULL, claim_token = NULL, slot_host = NULL, ahead = false,
                  secret = NULL, ended_at = now(), last_error = '\(Self.interruptedRunError)'
              FROM owed WHERE d.id = owed.id
              RETURNING owed.slot_host
            ),
            -- What ends with the run counts in it as cancelled, as the job's
            -- counts by status count those rows: a run's history and
            -- `status` agree.
            ended AS (
              UPDATE dlpipe.runs r SET ended_at = now(), exit_code = 130, cancelled = r.cancelled + (SELECT count(*) FROM closed)
              FROM ending WHERE r.id = ending.id
              RETURNING r.id
            ),
            slots AS (
              UPDATE dlpipe.hosts h SET in_flight = h.in_flight - c.n
              FROM (SELECT slot_host, count(*)::int AS n FROM closed WHERE slot_host IS NOT NULL GROUP BY slot_host) c
              WHERE h.job_id = $1 AND h.host = c.slot_host
            ),
            -- A --follow worker still in an older run hears of it too.
            notified AS (
              SELECT pg_notify('\(QueueSchema.workChannel)', $1::text || '\(QueueSchema.runEndedSuffix)') FROM (SELECT 1 FROM ended LIMIT 1) anything
            )
            SELECT id, (SELECT count(*) FROM notified) AS notified FROM ended
            """, [.int(job), .int(worker)]
        ).rows.isEmpty)
    }

    /// The last error of a download its run's interruption ended.
    package static let interruptedRunError = "its run was interrupted (its workers stopped) before it ended; the next run queues it again"

    /// The open run of the job, made when there is none; the worker joins it.
    /// An open run that no live worker is in any more is ended first.
    package func joinRun(worker: Int64, on connection: PostgresConnection) throws(PostgresError) -> Int64 {
        try endOrphanedRun(except: worker, on: connection)
        // Two workers starting together may both find no open run: the unique
        // index lets one insert win, and the other finds that run next time.
        for _ in 0..<5 {
            let rows = try connection.execute(
                """
                WITH existing AS (SELECT id FROM dlpipe.runs WHERE job_id = $1 AND ended_at IS NULL),
                created AS (
                  INSERT INTO dlpipe.runs (job_id) SELECT $1 WHERE NOT EXISTS (SELECT 1 FROM existing)
                  ON CONFLICT DO NOTHING RETURNING id
                ),
                run AS (SELECT id FROM existing UNION ALL SELECT id FROM created),
                joined AS (UPDATE dlpipe.workers SET run_id = (SELECT id FROM run) WHERE id = $2 AND EXISTS (SELECT 1 FROM run))
                SELECT id FROM run
                """, [.int(job), .int(worker)]
            ).rows
            if let row = rows.first { return try row.int("id") }
        }
        throw PostgresError(.unexpected, "no run of the job could be opened or found")
    }

    /// Queues `requests` for run `run` and returns their ids in order. A key
    /// the job knows already is one row: queued again (ready) when it ended in
    /// an earlier run, left as it is when this run has it (the first add of a
    /// run queues it, later ones get its id). The run is busy again; one
    /// NOTIFY goes out when anything was queued. With the job's
    /// `max_downloads`, the run queues at most that many downloads, whichever
    /// workers add them: a request past it is refused, and its id is 0.
    package func enqueue(_ requests: [QueuedRequest], run: Int64, on connection: PostgresConnection) throws(PostgresError) -> [Int64] {
        guard !requests.isEmpty else { return [] }
        // A key another worker inserted while this statement ran is neither
        // queued by it nor in its snapshot: the next try sees it.
        var tries = 0
        while true {
            do {
                guard limits.maxDownloads != nil else { return try enqueueOnce(requests, run: run, on: connection) }
                // With a limit, the run's row is locked before the add's
                // statement takes its snapshot: it then sees every add that
                // counted before it, and refuses only what is past the limit.
                return try connection.transaction { () throws(PostgresError) -> [Int64] in
                    try connection.execute("SELECT 1 FROM dlpipe.runs WHERE id = $1 FOR NO KEY UPDATE", [.int(run)])
                    return try enqueueOnce(requests, run: run, on: connection)
                }
            } catch where error.kind == .unexpected && tries < 3 {
                tries += 1
            }
        }
    }

    private func enqueueOnce(_ requests: [QueuedRequest], run: Int64, on connection: PostgresConnection) throws(PostgresError) -> [Int64] {
        let rows = try connection.execute(
            Self.enqueueStatement,
            [.int(job), .bytesArray(requests.map(\.key)), .textArray(requests.map(\.url)),
             .textArray(requests.map(\.host)), .intArray(requests.map { Int64($0.priority) }),
             .textArray(requests.map(\.request)), .textArray(requests.map(\.secret)), .int(run)]
        ).rows
        var ids: [Int64] = []
        ids.reserveCapacity(rows.count)
        for row in rows {
            if try row.bool("refused") {
                ids.append(0)
            } else if let id = try row.optionalInt("id") {
                ids.append(id)
            }
        }
        guard ids.count == requests.count else {
            throw PostgresError(.unexpected, "the queue answered \(ids.count) ids for \(requests.count) requests")
        }
        return ids
    }

    /// `enqueueOnce`'s statement: the rows, the run's count against
    /// `max_downloads`, and a NOTIFY for the new work, in one round trip.
    private static let enqueueStatement = """
        WITH input AS (
          SELECT * FROM unnest($2::bytea[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[])
            WITH ORDINALITY AS t(key, url, host, priority, request, secret, position)
        ),
        -- The job's max_downloads is the run's: the room left, read under
        -- the run's row lock, so that adds of several workers at once
        -- never queue more than it. No limit, no lock and no count.
        room AS (
          SELECT j.max_downloads - r.queued AS left FROM dlpipe.runs r JOIN dlpipe.jobs j ON j.id = r.job_id
          WHERE r.id = $8 AND j.max_downloads IS NOT NULL
          FOR NO KEY UPDATE OF r
        ),
        -- What this add would queue, first added first; past the room, refused.
        fresh AS (
          SELECT f.key, row_number() OVER (ORDER BY f.position) AS turn FROM (
            SELECT DISTINCT ON (i.key) i.key, i.position FROM input i
            -- LATERAL with a LIMIT: one index lookup per key, never a scan
            -- of the job's rows (see PostgresDownloadState.prime).
            LEFT JOIN LATERAL (
              SELECT d.id, d.run_id, d.status FROM dlpipe.downloads d WHERE d.job_id = $1 AND d.key = i.key LIMIT 1
            ) d ON true
            WHERE d.id IS NULL OR (d.run_id IS DISTINCT FROM $8 AND d.status NOT IN ('ready', 'running', 'paused'))
            ORDER BY i.key, i.position
          ) f
        ),
        refused AS (
          SELECT key FROM fresh WHERE turn > (SELECT greatest(0, "left") FROM room)
        ),
        new_hosts AS (
          INSERT INTO dlpipe.hosts (job_id, host)
          SELECT DISTINCT $1::bigint, host FROM input WHERE key NOT IN (SELECT key FROM refused) ORDER BY 2
          ON CONFLICT DO NOTHING
        ),
        -- Rows are inserted in key order (adds of several workers at once
        -- lock them in one order, and never deadlock), so ids follow the
        -- keys, not the adds. The claim orders by run_at before id: run_at
        -- a microsecond apart in add order (the last one now, the others
        -- just before) keeps equal priorities in the order added.
        queued AS (
          INSERT INTO dlpipe.downloads AS d (job_id, key, url, host, priority, request, secret, run_id, run_at)
          SELECT DISTINCT ON (key) $1, key, url, host, priority, request::jsonb, secret::jsonb, $8,
            now() - make_interval(secs => ((SELECT count(*) FROM input) - position) / 1e6)
          FROM input WHERE key NOT IN (SELECT key FROM refused) ORDER BY key, position
          ON CONFLICT (job_id, key) DO UPDATE SET
            status = 'ready', run_id = excluded.run_id, run_at = excluded.run_at, attempts = 0, last_error = NULL,
            ended_at = NULL, url = excluded.url, host = excluded.host, priority = excluded.priority,
            request = excluded.request, secret = excluded.secret
          -- A row held (running, or paused in a --follow worker that
          -- keeps it across runs) is left to its holder: made ready
          -- under its claim token, it broke the table's check.
          WHERE d.run_id IS DISTINCT FROM excluded.run_id AND d.status NOT IN ('ready', 'running', 'paused')
          RETURNING d.id, d.key
        ),
        -- The run is busy again (written only when it was idle), and its
        -- count of queued downloads grows while the job has a limit.
        busy AS (
          UPDATE dlpipe.runs SET idle_since = NULL,
            queued = queued + CASE WHEN EXISTS (SELECT 1 FROM room) THEN (SELECT count(*) FROM queued) ELSE 0 END
          WHERE id = $8 AND EXISTS (SELECT 1 FROM queued) AND (idle_since IS NOT NULL OR EXISTS (SELECT 1 FROM room))
        ),
        notified AS (
          SELECT pg_notify('\(QueueSchema.workChannel)', $1::text) FROM (SELECT 1 FROM queued LIMIT 1) anything
        ),
        ids AS (
          SELECT id, key FROM queued
          UNION ALL
          SELECT DISTINCT d.id, d.key FROM input i CROSS JOIN LATERAL (
            SELECT d.id, d.key FROM dlpipe.downloads d WHERE d.job_id = $1 AND d.key = i.key LIMIT 1
          ) d
          WHERE i.key NOT IN (SELECT key FROM queued) AND i.key NOT IN (SELECT key FROM refused)
        )
        SELECT ids.id, i.position, i.key IN (SELECT key FROM refused) AS refused,
          (SELECT count(*) FROM notified) AS notified
        FROM input i LEFT JOIN ids ON ids.key = i.key ORDER BY i.position
        """

    /// Whether the job has work (ready, scheduled or running anywhere), how
    /// the run stands, and whether it has been idle for `settle` seconds
    /// (database clock). Marks the run idle from now when it has no work and
    /// was not idle, busy when it has and was idle; otherwise writes nothing.
    package func look(run: Int64, settle: Double, on connection: PostgresConnection) throws(PostgresError) -> RunLook {
        let row = try connection.execute(
            """
            WITH work AS (
              SELECT EXISTS (SELECT 1 FROM dlpipe.downloads WHERE job_id = $1 AND status IN ('ready', 'running')) AS busy
            ),
            -- Written only when it changes: every worker looks, and a write
            -- would hold the run's row until its commit's flush.
            marked AS (
              UPDATE dlpipe.runs r
              SET idle_since = CASE WHEN work.busy THEN NULL ELSE now() END
              FROM work WHERE r.id = $2 AND r.ended_at IS NULL
                AND r.idle_since IS DISTINCT FROM CASE WHEN work.busy THEN NULL ELSE coalesce(r.idle_since, now()) END
              RETURNING r.idle_since
            )
            SELECT work.busy, r.ended_at IS NOT NULL AS ended, r.exit_code,
              coalesce((SELECT idle_since FROM marked), r.idle_since) <= now() - make_interval(secs => $3) AS settled
            FROM work, dlpipe.runs r WHERE r.id = $2
            """, [.int(job), .int(run), .double(settle)]
        ).rows[0]
        return RunLook(
            busy: try row.bool("busy"), ended: try row.bool("ended"),
            exitCode: try row.optionalInt("exit_code").map(Int.init),
            settled: (try? row.bool("settled")) ?? false)
    }

    /// Takes the run's `done` for `worker` when the run settled idle and no
    /// live worker took it; the job-wide counts when it was taken: the run's
    /// own and every worker's (`run_workers`), read in the snapshot that found
    /// nothing ready or running, so every report is in them.
    package func takeDone(run: Int64, worker: Int64, settle: Double, on connection: PostgresConnection) throws(PostgresError) -> RunSummary? {
        guard let row = try connection.execute(
            """
            WITH workers AS (\(Self.workerCountsSQL("$2"))
            )
            UPDATE dlpipe.runs r SET done_worker = $3, done_at = now()
            FROM workers c
            WHERE r.id = $2 AND r.ended_at IS NULL AND r.idle_since <= now() - make_interval(secs => $4)
              AND (r.done_worker IS NULL OR r.done_worker = $3 OR NOT EXISTS (
                SELECT 1 FROM dlpipe.workers w WHERE w.id = r.done_worker AND w.stopped_at IS NULL))
              AND NOT EXISTS (SELECT 1 FROM dlpipe.downloads WHERE job_id = $1 AND status IN ('ready', 'running'))
              -- A download paused in another worker is no work of the run's
              -- only while that worker lives: one killed holding it gives it
              -- back when its lease runs out, and the run, ended before, had
              -- lost it (exit 1, "0 failed"). Its holder must have heartbeated
              -- since the run went idle: a live one does within a third of its
              -- lease, a dead one never, and its lease then runs out first.
              AND NOT EXISTS (
                SELECT 1 FROM dlpipe.downloads d JOIN dlpipe.workers w ON w.id = d.worker_id
                WHERE d.job_id = $1 AND d.status = 'paused' AND d.worker_id <> $3 AND w.lease_until - w.lease < r.idle_since)
            RETURNING r.finished + c.finished AS finished, r.unchanged + c.unchanged AS unchanged,
              r.failed + c.failed AS failed, r.handled + c.handled AS handled, r.skipped + c.skipped AS skipped,
              r.bytes + c.bytes AS bytes, r.cancelled + c.cancelled AS cancelled,
              extract(epoch FROM now() - r.started_at)::float8 AS seconds
            """, [.int(job), .int(run), .int(worker), .double(settle)]
        ).rows.first else { return nil }
        var summary = RunSummary()
        summary.finished = Int(try row.int("finished"))
        summary.unchanged = Int(try row.int("unchanged"))
        summary.failed = Int(try row.int("failed"))
        summary.handled = Int(try row.int("handled"))
        summary.skipped = Int(try row.int("skipped"))
        summary.cancelled = Int(try row.int("cancelled"))
        summary.bytes = try row.int("bytes")
        summary.seconds = try row.double("seconds")
        return summary
    }

    /// `done` added work: the run goes on, and `done` is free for its next idle.
    package func releaseDone(run: Int64, on connection: PostgresConnection) throws(PostgresError) {
        try connection.execute("UPDATE dlpipe.runs SET done_worker = NULL, done_at = NULL WHERE id = $1", [.int(run)])
    }

    /// Ends the run with the job-wide exit code every worker exits with, and
    /// prunes the job's old runs and long-stopped workers (nothing grows per run).
    package func endRun(_ run: Int64, exitCode: Int, on connection: PostgresConnection) throws(PostgresError) {
        try connection.execute(
            """
            WITH ended AS (
              UPDATE dlpipe.runs SET ended_at = now(), exit_code = $3 WHERE id = $2 AND ended_at IS NULL RETURNING id
            ),
            old_runs AS (
              DELETE FROM dlpipe.runs WHERE job_id = $1 AND ended_at IS NOT NULL AND id NOT IN (
                SELECT id FROM dlpipe.runs WHERE job_id = $1 ORDER BY started_at DESC LIMIT 100)
            ),
            old_workers AS (
              DELETE FROM dlpipe.workers WHERE job_id = $1 AND stopped_at < now() - interval '7 days'
            ),
            -- The other workers learn it now, not at their next poll; the
            -- payload tells them it is the run's end (they look at the run
            -- for it, and not for every report's NOTIFY).
            notified AS (
              SELECT pg_notify('\(QueueSchema.workChannel)', $1::text || '\(QueueSchema.runEndedSuffix)') FROM (SELECT 1 FROM ended LIMIT 1) anything
            )
            SELECT count(*), (SELECT count(*) FROM notified) AS notified FROM ended
            """, [.int(job), .int(run), .int(Int64(exitCode))])
    }
}

/// How a run stands, as one worker sees it.
package struct RunLook: Sendable, Equatable {
    /// Something is ready (now or later) or running, in any worker.
    package var busy: Bool
    package var ended: Bool
    package var exitCode: Int?
    /// Idle for the whole settle time.
    package var settled: Bool
}

extension Int64 {
    var asInt: Int { Int(self) }
}

extension SharedQueue {
    /// A run's counts summed over its workers' rows (`run_workers`), as one
    /// row (zeros when none reported): `run` is the SQL of the run's id.
    static func workerCountsSQL(_ run: String) -> String {
        """
        SELECT coalesce(sum(finished), 0)::bigint AS finished, coalesce(sum(unchanged), 0)::bigint AS unchanged,
          coalesce(sum(failed), 0)::bigint AS failed, coalesce(sum(handled), 0)::bigint AS handled,
          coalesce(sum(skipped), 0)::bigint AS skipped, coalesce(sum(cancelled), 0)::bigint AS cancelled,
          coalesce(sum(bytes), 0)::bigint AS bytes
        FROM dlpipe.run_workers WHERE run_id = \(run)
        """
    }
}
