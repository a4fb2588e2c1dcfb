import DLPipe

/// The reads behind `dlpipe status --queue`: a few SELECTs in one read-only
/// transaction with one snapshot (REPEATABLE READ), so that the figures agree
/// with each other and `now()` is one instant for all of them. Nothing is
/// written and nothing created: a database without the schema is reported,
/// not migrated; one that a newer dlpipe migrated is refused as
/// `SchemaMigrator` refuses it; an older one is read as it is (every column
/// read here exists since version 1). The calls block their thread until the
/// database answers.
extension QueueReport {
    /// Everything about the job called `name`.
    package static func read(job name: String, on connection: PostgresConnection) throws(PostgresError) -> QueueReading<QueueReport> {
        try QueueSnapshot.reading(connection) { version throws(PostgresError) -> QueueReading<QueueReport> in
            let found = try connection.execute(QueueSnapshot.summarySQL(version: version) + " WHERE j.name = $1", [.text(name)]).rows
            guard let row = found.first else {
                let names = try connection.execute(
                    "SELECT name, count(*) OVER () AS total FROM dlpipe.jobs ORDER BY name LIMIT $1",
                    [.int(Int64(nameLimit))]).rows
                return .unknownJob(
                    names: try names.map { row throws(PostgresError) in try row.text("name") },
                    count: Int(try names.first?.int("total") ?? 0))
            }
            let job = try QueueSnapshot.summary(row)
            let hosts = try connection.execute(
                """
                SELECT h.host, h.in_flight,
                  (SELECT count(*) FROM dlpipe.downloads d
                   WHERE d.job_id = h.job_id AND d.host = h.host AND d.status = 'ready') AS waiting,
                  count(*) OVER () AS hosts, sum(h.in_flight) OVER () AS in_flight_total
                FROM dlpipe.hosts h
                WHERE h.job_id = $1 AND h.in_flight > 0
                ORDER BY h.in_flight DESC, h.host
                LIMIT $2
                """, [.int(job.id), .int(Int64(hostLimit))]).rows
            return .found(QueueReport(
                schemaVersion: version, job: job,
                perHost: try row.int("per_host"), hostDelay: try row.double("host_delay"),
                maxDownloads: try row.optionalInt("max_downloads"),
                workers: try workers(of: job.id, version: version, on: connection),
                hosts: try hosts.map { host throws(PostgresError) in
                    QueueHostStatus(host: try host.text("host"), inFlight: try host.int("in_flight"), waiting: try host.int("waiting"))
                },
                hostsInFlight: try hosts.first?.int("hosts") ?? 0,
                inFlight: try hosts.first?.int("in_flight_total") ?? 0,
                failures: try failures(of: job.id, on: connection),
                runs: try runs(of: job.id, version: version, on: connection)))
        }
    }

    /// Workers not stopped, the live and the dead whose claims are not yet
    /// taken back, with what each holds.
    static func workers(of job: Int64, version: Int, on connection: PostgresConnection) throws(PostgresError) -> [QueueWorkerStatus] {
        try connection.execute(
            """
            SELECT w.id, w.hostname, w.pid,
              greatest(0, extract(epoch FROM now() - w.started_at))::float8 AS started_ago,
              greatest(0, extract(epoch FROM now() - w.heartbeat_at))::float8 AS heartbeat_ago,
              extract(epoch FROM w.lease_until - now())::float8 AS lease_left,
              w.lease_until < now() AS expired,
              h.running, h.transferring, h.held_ahead
            FROM dlpipe.workers w
            CROSS JOIN LATERAL (
              SELECT count(*) AS running, count(*) FILTER (WHERE d.slot_host IS NOT NULL) AS transferring,
                     count(*) FILTER (WHERE \(QueueSnapshot.heldAhead(version: version))) AS held_ahead
              FROM dlpipe.downloads d WHERE d.worker_id = w.id AND d.status = 'running'
            ) h
            WHERE w.job_id = $1 AND w.stopped_at IS NULL
            ORDER BY w.id
            """, [.int(job)]
        ).rows.map { row throws(PostgresError) in
            QueueWorkerStatus(
                id: try row.int("id"), hostname: try row.text("hostname"), pid: try row.int("pid"),
                startedAgo: try row.double("started_ago"), heartbeatAgo: try row.double("heartbeat_ago"),
                leaseLeft: try row.double("lease_left"), leaseExpired: try row.bool("expired"),
                running: try row.int("running"), transferring: try row.int("transferring"),
                heldAhead: try row.int("held_ahead"))
        }
    }

    /// The most recent failures (the count is in the job's counts).
    private static func failures(of job: Int64, on connection: PostgresConnection) throws(PostgresError) -> [QueueFailure] {
        try connection.execute(
            """
            SELECT url, last_error, attempts,
              extract(epoch FROM now() - ended_at)::float8 AS ended_ago
            FROM dlpipe.downloads
            WHERE job_id = $1 AND status = 'failed'
            ORDER BY ended_at DESC NULLS LAST, id DESC
            LIMIT $2
            """, [.int(job), .int(Int64(failureLimit))]
        ).rows.map { row throws(PostgresError) in
            QueueFailure(
                url: try row.text("url"), lastError: try row.optionalText("last_error"),
                attempts: try row.int("attempts"), endedAgo: try QueueSnapshot.age(row, "ended_ago"))
        }
    }

    /// The run's own counts plus its workers' (`run_workers`, from the
    /// schema version that has them).
    private static func runs(of job: Int64, version: Int, on connection: PostgresConnection) throws(PostgresError) -> [QueueRunStatus] {
        let perWorker = version >= QueueSchema.runWorkersVersion
            ? "CROSS JOIN LATERAL (\(SharedQueue.workerCountsSQL("r.id"))) c"
            : "CROSS JOIN (SELECT 0 AS finished, 0 AS unchanged, 0 AS failed, 0 AS handled) c"
        return try connection.execute(
            """
            SELECT id, exit_code, r.finished + c.finished AS finished, r.unchanged + c.unchanged AS unchanged,
              r.failed + c.failed AS failed, r.handled + c.handled AS handled, done_worker,
              greatest(0, extract(epoch FROM now() - started_at))::float8 AS started_ago,
              extract(epoch FROM now() - ended_at)::float8 AS ended_ago,
              CASE WHEN ended_at IS NULL THEN extract(epoch FROM now() - idle_since)::float8 END AS idle_ago
            FROM dlpipe.runs r \(perWorker)
            WHERE job_id = $1
            ORDER BY started_at DESC, id DESC
            LIMIT $2
            """, [.int(job), .int(Int64(runLimit))]
        ).rows.map { row throws(PostgresError) in
            QueueRunStatus(
                id: try row.int("id"), startedAgo: try row.double("started_ago"),
                endedAgo: try QueueSnapshot.age(row, "ended_ago"), idleAgo: try QueueSnapshot.age(row, "idle_ago"),
                exitCode: try row.optionalInt("exit_code"),
                finished: try row.int("finished"), unchanged: try row.int("unchanged"),
                failed: try row.int("failed"), handled: try row.int("handled"),
                doneWorker: try row.optionalInt("done_worker"))
        }
    }
}

extension QueueJobList {
    /// Every job in the queue, by name, with its counts and workers.
    package static func read(on connection: PostgresConnection) throws(PostgresError) -> QueueReading<QueueJobList> {
        try QueueSnapshot.reading(connection) { version throws(PostgresError) -> QueueReading<QueueJobList> in
            let rows = try connection.execute(QueueSnapshot.summarySQL(version: version) + " ORDER BY j.name").rows
            return .found(QueueJobList(
                schemaVersion: version,
                jobs: try rows.map { row throws(PostgresError) in try QueueSnapshot.summary(row) }))
        }
    }
}

/// The transaction and the statement the job list and the job report share.
enum QueueSnapshot {
    /// Runs `body` with the schema's version in a read-only transaction of
    /// one snapshot, after checking that there is a queue to read.
    static func reading<Figures>(
        _ connection: PostgresConnection,
        _ body: (Int) throws(PostgresError) -> QueueReading<Figures>
    ) throws(PostgresError) -> QueueReading<Figures> {
        // READ ONLY: the server itself refuses any write in here.
        try connection.run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        do {
            let reading = try version(connection).map { version throws(PostgresError) in try body(version) } ?? .noQueue
            try connection.run("COMMIT")
            return reading
        } catch {
            // A broken connection cannot roll back; the server does when it notices.
            try? connection.run("ROLLBACK")
            throw error
        }
    }

    /// The schema's version, nil when there is no queue: no `dlpipe` schema,
    /// or one that no migration finished (version 0). A newer version than
    /// this build knows is refused as `SchemaMigrator` refuses it.
    static func version(_ connection: PostgresConnection) throws(PostgresError) -> Int? {
        // to_regclass: NULL for a table that does not exist, where naming it
        // in a SELECT would abort the transaction.
        let present = try connection.execute("SELECT to_regclass('dlpipe.schema_version') IS NOT NULL AS present").rows[0]
        guard try present.bool("present") else { return nil }
        guard let row = try connection.execute("SELECT version FROM dlpipe.schema_version").rows.first else { return nil }
        let version = Int(try row.int("version"))
        guard version > 0 else { return nil }
        try SchemaMigrator().check(version: version)
        return version
    }

    /// An age that may be NULL (`greatest` would turn NULL into 0), never
    /// below 0: a row written by a transaction that began a moment after this
    /// one can carry a time a little past this snapshot's `now()`.
    static func age(_ row: PostgresRow, _ column: String) throws(PostgresError) -> Double? {
        try row.optionalDouble(column).map { max(0, $0) }
    }

    /// Whether a running row is a claim held ahead: `downloads.ahead`, from
    /// the schema version that has it; before, no claim was held ahead.
    static func heldAhead(version: Int) -> String {
        version >= QueueSchema.aheadVersion ? "d.ahead" : "false"
    }

    /// A job's row with its counts by status and its workers; callers add a
    /// WHERE (one job) or an ORDER BY (all).
    static func summarySQL(version: Int) -> String { """
        SELECT j.id, j.name, j.per_host, extract(epoch FROM j.host_delay)::float8 AS host_delay, j.max_downloads,
          c.ready, c.scheduled, c.running, c.transferring, c.held_ahead, c.paused, c.finished, c.skipped, c.failed, c.handled, c.cancelled,
          w.alive, w.expired, \(version >= QueueSchema.controlsVersion
            ? "CASE WHEN j.paused_at IS NOT NULL THEN greatest(0, extract(epoch FROM now() - j.paused_at))::float8 END" : "NULL::float8") AS paused_ago
        FROM dlpipe.jobs j
        CROSS JOIN LATERAL (
          SELECT count(*) FILTER (WHERE d.status = 'ready' AND d.run_at <= now() AND NOT coalesce(h.next_at > now(), false)) AS ready,
                 count(*) FILTER (WHERE d.status = 'ready' AND (d.run_at > now() OR coalesce(h.next_at > now(), false))) AS scheduled,
                 count(*) FILTER (WHERE d.status = 'running') AS running,
                 count(*) FILTER (WHERE d.status = 'running' AND d.slot_host IS NOT NULL) AS transferring,
                 count(*) FILTER (WHERE d.status = 'running' AND \(heldAhead(version: version))) AS held_ahead,
                 count(*) FILTER (WHERE d.status = 'paused') AS paused,
                 count(*) FILTER (WHERE d.status = 'finished') AS finished,
                 count(*) FILTER (WHERE d.status = 'skipped') AS skipped,
                 count(*) FILTER (WHERE d.status = 'failed') AS failed,
                 count(*) FILTER (WHERE d.status = 'handled') AS handled,
                 count(*) FILTER (WHERE d.status = 'cancelled') AS cancelled
          -- A ready row whose host a Retry-After or a host delay holds back
          -- (the host's next_at) waits for its time too: scheduled.
          FROM dlpipe.downloads d
          LEFT JOIN dlpipe.hosts h ON h.job_id = d.job_id AND h.host = d.host
          WHERE d.job_id = j.id
        ) c
        CROSS JOIN LATERAL (
          SELECT count(*) FILTER (WHERE w.lease_until >= now()) AS alive,
                 count(*) FILTER (WHERE w.lease_until < now()) AS expired
          FROM dlpipe.workers w WHERE w.job_id = j.id AND w.stopped_at IS NULL
        ) w
        """
    }

    static func summary(_ row: PostgresRow) throws(PostgresError) -> QueueJobSummary {
        var counts = QueueCounts()
        counts.ready = try row.int("ready")
        counts.scheduled = try row.int("scheduled")
        counts.running = try row.int("running")
        counts.transferring = try row.int("transferring")
        counts.heldAhead = try row.int("held_ahead")
        counts.paused = try row.int("paused")
        counts.finished = try row.int("finished")
        counts.skipped = try row.int("skipped")
        counts.failed = try row.int("failed")
        counts.handled = try row.int("handled")
        counts.cancelled = try row.int("cancelled")
        return QueueJobSummary(
            id: try row.int("id"), name: try row.text("name"), counts: counts,
            workersAlive: try row.int("alive"), workersExpired: try row.int("expired"),
            pausedAgo: try row.optionalDouble("paused_ago"))
    }
}
