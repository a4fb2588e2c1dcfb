import DLPipe

/// `dlpipe queue`: the control plane of a shared job (docs/scale-out.md,
/// "Steering a job"). Each command is one transaction on its own
/// connection, safe while workers claim and report: the reads take one
/// snapshot; the writes lock the job's row first, so that two commands of
/// one job take turns, and tell the workers by NOTIFY as they commit.
package enum QueueControlPlane {
    /// The failures of the job's latest run (or of run `run`), filtered by
    /// host and by error kind (`http`, `network`, ...: the word before the
    /// first colon of the last error), oldest first. A host given without
    /// its port matches it on every port. `limit`: the first ones only.
    package static func failures(
        job name: String, run: Int64?, host: String?, kind: String?, limit: Int? = nil, on connection: PostgresConnection
    ) throws(PostgresError) -> QueueReading<QueueFailureList> {
        try QueueSnapshot.reading(connection) { _ throws(PostgresError) -> QueueReading<QueueFailureList> in
            guard let job = try jobID(name, on: connection) else { return try unknown(on: connection) }
            // The run asked for when the job has it (not purged), else the latest; nil when neither.
            let chosen = try connection.execute(
                "SELECT max(id) AS id FROM dlpipe.runs WHERE job_id = $1 AND ($2::bigint IS NULL OR id = $2::bigint)",
                [.int(job), run.map { .int($0) } ?? .null]).rows[0].optionalInt("id")
            guard let chosen else { return .found(QueueFailureList(run: nil, failures: [])) }
            let rows = try connection.execute(
                """
                SELECT id, url, host, last_error, attempts, extract(epoch FROM now() - ended_at)::float8 AS ended_ago
                FROM dlpipe.downloads
                WHERE job_id = $1 AND status = 'failed' AND run_id = $2
                  AND ($3::text IS NULL OR host = $3 OR left(host, length($3) + 1) = $3 || ':') AND ($4::text IS NULL OR split_part(last_error, ':', 1) = $4)
                ORDER BY ended_at NULLS FIRST, id
                LIMIT $5
                """, [.int(job), .int(chosen), host.map { .text($0) } ?? .null, kind.map { .text($0) } ?? .null,
                      limit.map { .int(Int64($0)) } ?? .null]
            ).rows
            return .found(QueueFailureList(run: chosen, failures: try rows.map { row throws(PostgresError) in
                QueueFailedDownload(
                    id: try row.int("id"), url: try row.text("url"), host: try row.text("host"),
                    lastError: try row.optionalText("last_error"), attempts: try row.int("attempts"),
                    endedAgo: try QueueSnapshot.age(row, "ended_ago"))
            }))
        }
    }

    /// The job's runs, newest first, each with its job-wide counts and the
    /// counts of each worker that reported in it (`run_workers`).
    package static func runs(job name: String, on connection: PostgresConnection) throws(PostgresError) -> QueueReading<[QueueRunHistory]> {
        try QueueSnapshot.reading(connection) { version throws(PostgresError) -> QueueReading<[QueueRunHistory]> in
            guard version >= QueueSchema.runWorkersVersion else {
                throw PostgresError(.incompatible, "the queue's schema is at version \(version), older than the run history needs (\(QueueSchema.runWorkersVersion)): a worker of this dlpipe migrates it when it starts")
            }
            guard let job = try jobID(name, on: connection) else { return try unknown(on: connection) }
            return .found(try QueueRunHistory.read(job: job, version: version, on: connection))
        }
    }

    /// Pauses the job: no worker claims until `resume`. Transfers that run
    /// finish; each worker gives back its claims held ahead at its next
    /// cycle, which the NOTIFY starts. The workers as they are now.
    package static func pause(job name: String, on connection: PostgresConnection) throws(PostgresError) -> QueueReading<QueueSteered> {
        try steering(name, on: connection) { job throws(PostgresError) -> Bool in
            let row = try connection.execute(
                """
                WITH before AS (SELECT paused_at FROM dlpipe.jobs WHERE id = $1),
                paused AS (UPDATE dlpipe.jobs SET paused_at = coalesce(paused_at, now()) WHERE id = $1 RETURNING id),
                notified AS (
                  SELECT pg_notify('\(QueueSchema.workChannel)', payload)
                  FROM paused CROSS JOIN (VALUES ($1::text), ($1::text || '\(QueueSchema.pauseSuffix)')) AS p(payload)
                )
                SELECT (SELECT paused_at IS NULL FROM before) AS changed, (SELECT count(*) FROM notified) AS notified
                """, [.int(job)]).rows[0]
            return try row.bool("changed")
        }
    }

    /// Lets the job's workers claim again; the NOTIFY makes them claim at once.
    package static func resume(job name: String, on connection: PostgresConnection) throws(PostgresError) -> QueueReading<QueueSteered> {
        try steering(name, on: connection) { job throws(PostgresError) -> Bool in
            let row = try connection.execute(
                """
                WITH before AS (SELECT paused_at FROM dlpipe.jobs WHERE id = $1),
                resumed AS (UPDATE dlpipe.jobs SET paused_at = NULL WHERE id = $1 RETURNING id),
                notified AS (
                  SELECT pg_notify('\(QueueSchema.workChannel)', payload)
                  FROM resumed CROSS JOIN (VALUES ($1::text), ($1::text || '\(QueueSchema.resumeSuffix)')) AS p(payload)
                )
                SELECT (SELECT paused_at IS NOT NULL FROM before) AS changed, (SELECT count(*) FROM notified) AS notified
                """, [.int(job)]).rows[0]
            return try row.bool("changed")
        }
    }

    /// Asks every live worker of the job to leave as on SIGTERM: a mark on
    /// its row (read by its heartbeat) and a NOTIFY (heard at once). A
    /// worker that starts later is not asked. The workers asked, as they
    /// are now (`QueueSteered.workers`); changed: any was not asked before.
    package static func stop(job name: String, on connection: PostgresConnection) throws(PostgresError) -> QueueReading<QueueSteered> {
        try steering(name, on: connection) { job throws(PostgresError) -> Bool in
            let row = try connection.execute(
                """
                WITH asked AS (
                  UPDATE dlpipe.workers SET stop_asked_at = now()
                  WHERE job_id = $1 AND stopped_at IS NULL AND lease_until >= now() AND stop_asked_at IS NULL
                  RETURNING id
                ),
                notified AS (
                  SELECT pg_notify('\(QueueSchema.workChannel)', $1::text || '\(QueueSchema.stopSuffix)')
                  FROM (SELECT 1 FROM dlpipe.workers
                        WHERE job_id = $1 AND stopped_at IS NULL AND lease_until >= now() LIMIT 1) anyone
                )
                SELECT (SELECT count(*) FROM asked) AS asked, (SELECT count(*) FROM notified) AS notified
                """, [.int(job)]).rows[0]
            return try row.int("asked") > 0
        }
    }

    /// Deletes the job's runs that ended more than `seconds` ago, with their
    /// workers' counts (`run_workers`): never an open run, nor the run a
    /// live worker is still in (a `--follow` worker reports into its last
    /// run until the next opens), and nothing of the per-URL state
    /// (`url_facts`, `downloads`, `store`, the files).
    package static func purge(job name: String, olderThan seconds: Double, on connection: PostgresConnection) throws(PostgresError) -> QueueReading<QueuePurged> {
        try writing(connection) { () throws(PostgresError) -> QueueReading<QueuePurged> in
            guard let job = try jobID(name, lock: true, on: connection) else { return try unknown(on: connection) }
            let row = try connection.execute(
                """
                WITH old AS (
                  SELECT r.id FROM dlpipe.runs r
                  WHERE r.job_id = $1 AND r.ended_at IS NOT NULL AND r.ended_at < now() - make_interval(secs => $2)
                    AND NOT EXISTS (SELECT 1 FROM dlpipe.workers w WHERE w.run_id = r.id AND w.stopped_at IS NULL)
                ),
                rows AS (SELECT count(*) AS n FROM dlpipe.run_workers WHERE run_id IN (SELECT id FROM old)),
                deleted AS (DELETE FROM dlpipe.runs WHERE id IN (SELECT id FROM old) RETURNING id)
                SELECT (SELECT count(*) FROM deleted) AS runs, (SELECT n FROM rows) AS worker_rows,
                  (SELECT count(*) FROM dlpipe.runs WHERE job_id = $1) - (SELECT count(*) FROM deleted) AS kept
                """, [.int(job), .double(seconds)]).rows[0]
            return .found(QueuePurged(runs: try row.int("runs"), workerRows: try row.int("worker_rows"), kept: try row.int("kept")))
        }
    }

    /// A write of `job`'s controls and the job's workers after it.
    private static func steering(
        _ name: String, on connection: PostgresConnection, _ body: (Int64) throws(PostgresError) -> Bool
    ) throws(PostgresError) -> QueueReading<QueueSteered> {
        try writing(connection) { () throws(PostgresError) -> QueueReading<QueueSteered> in
            guard let job = try jobID(name, lock: true, on: connection) else { return try unknown(on: connection) }
            let changed = try body(job)
            let paused = try connection.execute("SELECT paused_at IS NOT NULL AS paused FROM dlpipe.jobs WHERE id = $1", [.int(job)]).rows[0]
            return .found(QueueSteered(
                changed: changed, paused: try paused.bool("paused"),
                workers: try QueueReport.workers(of: job, version: QueueSchema.controlsVersion, on: connection)))
        }
    }

    /// One read-write transaction on a schema that has the controls
    /// (`needs`: a later version, for a command that writes its columns).
    private static func writing<Figures>(
        _ connection: PostgresConnection, needs: Int = QueueSchema.controlsVersion, _ body: () throws(PostgresError) -> QueueReading<Figures>
    ) throws(PostgresError) -> QueueReading<Figures> {
        try connection.transaction { () throws(PostgresError) -> QueueReading<Figures> in
            guard let version = try QueueSnapshot.version(connection) else { return .noQueue }
            guard version >= needs else {
                throw PostgresError(
                    .incompatible,
                    "the queue's schema is at version \(version), older than `dlpipe queue` needs (\(needs)): start a worker of this dlpipe once to migrate it (workers of older versions are then refused)")
            }
            return try body()
        }
    }

    /// The id of the job called `name`; `lock`: its row locked until the commit.
    private static func jobID(_ name: String, lock: Bool = false, on connection: PostgresConnection) throws(PostgresError) -> Int64? {
        try connection.execute(
            "SELECT id FROM dlpipe.jobs WHERE name = $1" + (lock ? " FOR UPDATE" : ""), [.text(name)]
        ).rows.first?.int("id")
    }

    private static func unknown<Figures>(on connection: PostgresConnection) throws(PostgresError) -> QueueReading<Figures> {
        let names = try connection.execute(
            "SELECT name, count(*) OVER () AS total FROM dlpipe.jobs ORDER BY name LIMIT $1",
            [.int(Int64(QueueReport.nameLimit))]).rows
        return .unknownJob(
            names: try names.map { row throws(PostgresError) in try row.text("name") },
            count: Int(try names.first?.int("total") ?? 0))
    }
}

extension QueueControlPlane {
    /// Puts the failed downloads of the job's latest run (those of `host`,
    /// of error kind `kind`) back to ready in that run, their attempts
    /// anew, and reopens the run when it had ended. Each leaves the failed
    /// count it was in (its worker's in the run, so that the workers'
    /// counts still add up to the run's) and counts again as it ends; the
    /// run's `retried` keeps how many were put back. The NOTIFY makes
    /// running and `--follow` workers claim them at once; a worker started
    /// while the run is open joins it. Nil when the job has no run.
    package static func retryFailed(
        job name: String, host: String?, kind: String?, on connection: PostgresConnection
    ) throws(PostgresError) -> QueueReading<QueueRetried> {
        try writing(connection, needs: QueueSchema.retriedVersion) { () throws(PostgresError) -> QueueReading<QueueRetried> in
            guard let job = try jobID(name, lock: true, on: connection) else { return try unknown(on: connection) }
            let rows = try connection.execute(
                """
                WITH latest AS (
                  SELECT id, ended_at IS NOT NULL AS ended FROM dlpipe.runs WHERE job_id = $1 ORDER BY id DESC LIMIT 1 FOR UPDATE
                ),
                retried AS (
                  UPDATE dlpipe.downloads d SET status = 'ready', run_at = now(), attempts = 0, ended_at = NULL, worker_id = NULL
                  FROM latest
                  WHERE d.job_id = $1 AND d.run_id = latest.id AND d.status = 'failed'
                    AND ($2::text IS NULL OR d.host = $2 OR left(d.host, length($2) + 1) = $2 || ':')
                    AND ($3::text IS NULL OR split_part(d.last_error, ':', 1) = $3)
                  RETURNING d.id, d.ended_by
                ),
                -- Each failure leaves the count it was in: its worker's in
                -- the run (they count again as they end), else the run's own.
                by_worker AS (SELECT ended_by, count(*) AS n FROM retried GROUP BY ended_by),
                uncounted AS (
                  UPDATE dlpipe.run_workers rw SET failed = rw.failed - b.n
                  FROM by_worker b, latest
                  WHERE rw.run_id = latest.id AND rw.worker_id = b.ended_by
                  RETURNING b.n
                ),
                reopened AS (
                  UPDATE dlpipe.runs r
                  SET failed = r.failed - (SELECT count(*) FROM retried) + (SELECT coalesce(sum(n), 0) FROM uncounted),
                      retried = r.retried + (SELECT count(*) FROM retried),
                      ended_at = NULL, exit_code = NULL, idle_since = NULL,
                      done_worker = CASE WHEN latest.ended THEN NULL ELSE r.done_worker END,
                      done_at = CASE WHEN latest.ended THEN NULL ELSE r.done_at END,
                      reopened_at = CASE WHEN latest.ended THEN now() ELSE r.reopened_at END
                  FROM latest WHERE r.id = latest.id AND EXISTS (SELECT 1 FROM retried)
                  RETURNING r.id
                ),
                notified AS (SELECT pg_notify('\(QueueSchema.workChannel)', $1::text) FROM reopened)
                SELECT latest.id, latest.ended, (SELECT count(*) FROM retried) AS retried,
                  (SELECT count(*) FROM notified) AS notified
                FROM latest
                """, [.int(job), host.map { .text($0) } ?? .null, kind.map { .text($0) } ?? .null]).rows
            guard let row = rows.first else { return .found(QueueRetried(run: nil, retried: 0, reopened: false)) }
            let retried = try row.int("retried")
            let ended = try row.bool("ended")
            return .found(QueueRetried(run: try row.int("id"), retried: retried, reopened: retried > 0 && ended))
        }
    }
}

/// What `retry --failed` did.
package struct QueueRetried: Sendable, Equatable {
    /// The run they are back in; nil when the job has no run.
    package let run: Int64?
    package let retried: Int64
    /// Whether the run had ended and is open again.
    package let reopened: Bool
}

extension QueueControlPlane {
    /// The last error of a download `dlpipe queue cancel` ended while it waited.
    package static let cancelledError = "cancelled: its run was cancelled (dlpipe queue cancel)"

    /// Cancels the job's open run: its waiting downloads end cancelled now
    /// (counted in the run), no worker claims for it any more, and the
    /// NOTIFY makes every worker in it cancel what it holds, each reporting
    /// its own as any cancel. The run then ends as runs end: `done` once,
    /// with the counts. The workers as they are now.
    package static func cancel(job name: String, on connection: PostgresConnection) throws(PostgresError) -> QueueReading<QueueCancelledRun> {
        try writing(connection) { () throws(PostgresError) -> QueueReading<QueueCancelledRun> in
            guard let job = try jobID(name, lock: true, on: connection) else { return try unknown(on: connection) }
            let rows = try connection.execute(
                """
                WITH open AS (
                  SELECT id, cancel_asked_at IS NOT NULL AS already,
                    extract(epoch FROM now() - cancel_asked_at)::float8 AS asked_ago
                  FROM dlpipe.runs WHERE job_id = $1 AND ended_at IS NULL FOR UPDATE
                ),
                swept AS (
                  UPDATE dlpipe.downloads SET status = 'cancelled', ended_at = now(), secret = NULL, worker_id = NULL, last_error = $2
                  WHERE job_id = $1 AND status = 'ready' AND EXISTS (SELECT 1 FROM open)
                  RETURNING id
                ),
                marked AS (
                  UPDATE dlpipe.runs r SET cancel_asked_at = coalesce(r.cancel_asked_at, now()),
                    cancelled = r.cancelled + (SELECT count(*) FROM swept)
                  FROM open WHERE r.id = open.id
                  RETURNING r.id
                ),
                notified AS (
                  SELECT pg_notify('\(QueueSchema.workChannel)', $1::text || '\(QueueSchema.cancelInfix)' || marked.id::text) FROM marked
                )
                SELECT open.id, open.already, open.asked_ago, (SELECT count(*) FROM swept) AS swept,
                  (SELECT count(*) FROM notified) AS notified
                FROM open
                """, [.int(job), .text(cancelledError)]).rows
            let workers = try QueueReport.workers(of: job, version: QueueSchema.controlsVersion, on: connection)
            guard let row = rows.first else { return .found(QueueCancelledRun(run: nil, queued: 0, workers: workers)) }
            let asked = try row.bool("already") ? try QueueSnapshot.age(row, "asked_ago") ?? 0 : nil
            return .found(QueueCancelledRun(run: try row.int("id"), queued: try row.int("swept"), workers: workers, cancelledAgo: asked))
        }
    }
}

/// What `cancel` did.
package struct QueueCancelledRun: Sendable, Equatable {
    /// The run cancelled; nil when none was open.
    package let run: Int64?
    /// Waiting downloads it ended cancelled.
    package let queued: Int64
    /// The job's workers, with what each holds (and now cancels).
    package let workers: [QueueWorkerStatus]
    /// How long ago an earlier cancel of the same run was asked (the run
    /// is settling: its workers cancel what they hold); nil when this one
    /// is the first.
    package var cancelledAgo: Double? = nil
}

extension SharedQueue {
    /// Ends cancelled what waits in run `run` after `dlpipe queue cancel`
    /// (a dead worker's claims taken back, a handler's late add), counted
    /// in the run, so that the run can end; nothing for a run not cancelled.
    package func sweepCancelled(run: Int64, on connection: PostgresConnection) throws(PostgresError) {
        try connection.execute(
            """
            WITH cancelled AS (SELECT id FROM dlpipe.runs WHERE id = $2 AND ended_at IS NULL AND cancel_asked_at IS NOT NULL),
            swept AS (
              UPDATE dlpipe.downloads SET status = 'cancelled', ended_at = now(), secret = NULL, worker_id = NULL, last_error = $3
              WHERE job_id = $1 AND status = 'ready' AND EXISTS (SELECT 1 FROM cancelled)
              RETURNING id
            ),
            counted AS (
              UPDATE dlpipe.runs SET cancelled = cancelled + (SELECT count(*) FROM swept)
              WHERE id = $2 AND EXISTS (SELECT 1 FROM swept)
            )
            SELECT count(*) AS n FROM swept
            """, [.int(job), .int(run), .text(QueueControlPlane.cancelledError)])
    }
}
