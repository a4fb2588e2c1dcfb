import DLPipe

/// The failures `dlpipe queue failures` lists.
package struct QueueFailureList: Sendable, Equatable {
    /// The run they are of; nil when the job has no run (or not the one asked for).
    package let run: Int64?
    package let failures: [QueueFailedDownload]
}

/// One failed download of a run.
package struct QueueFailedDownload: Sendable, Equatable {
    package let id: Int64
    /// Without credentials (the queue keeps none in `url`).
    package let url: String
    package let host: String
    package let lastError: String?
    package let attempts: Int64
    package let endedAgo: Double?

    /// The error's kind (`http`, `network`, ...), the word before the first colon.
    package var kind: String? {
        guard let lastError, let colon = lastError.firstIndex(of: ":") else { return nil }
        return String(lastError[..<colon])
    }
}

/// A job after `pause`, `resume` or `stop`.
package struct QueueSteered: Sendable, Equatable {
    /// Whether the command changed anything (a second `pause` does not).
    package let changed: Bool
    package let paused: Bool
    /// The job's workers not stopped, with what each holds.
    package let workers: [QueueWorkerStatus]
}

/// What `purge` deleted, and how many runs the job keeps.
package struct QueuePurged: Sendable, Equatable {
    package let runs: Int64
    /// Rows of `run_workers` that went with them.
    package let workerRows: Int64
    package let kept: Int64
}

/// One run of the job's history, with each worker's share.
package struct QueueRunHistory: Sendable, Equatable {
    package let run: QueueRunStatus
    package let skipped: Int64
    package let cancelled: Int64
    package let bytes: Int64
    /// Failures `retry --failed` put back into the run (each counts now as it ended again).
    package let retried: Int64
    package let workers: [QueueRunWorker]
}

/// A worker's counts in one run; its host name and PID while its row is
/// kept (workers stopped for a week are pruned, their counts stay).
package struct QueueRunWorker: Sendable, Equatable {
    package let id: Int64
    package let hostname: String?
    package let pid: Int64?
    package let finished: Int64
    package let unchanged: Int64
    package let failed: Int64
    package let handled: Int64
    package let skipped: Int64
    package let cancelled: Int64
    package let bytes: Int64
}

extension QueueRunHistory {
    /// Every run the job keeps, newest first, in the caller's snapshot.
    static func read(job: Int64, version: Int, on connection: PostgresConnection) throws(PostgresError) -> [QueueRunHistory] {
        let runs = try connection.execute(
            """
            SELECT r.id, r.exit_code, r.done_worker, r.finished + c.finished AS finished, r.unchanged + c.unchanged AS unchanged,
              r.failed + c.failed AS failed, r.handled + c.handled AS handled, r.skipped + c.skipped AS skipped,
              r.cancelled + c.cancelled AS cancelled, r.bytes + c.bytes AS bytes,
              \(version >= QueueSchema.retriedVersion ? "r.retried" : "0::bigint") AS retried,
              greatest(0, extract(epoch FROM now() - r.started_at))::float8 AS started_ago,
              extract(epoch FROM now() - r.ended_at)::float8 AS ended_ago,
              CASE WHEN r.ended_at IS NULL THEN extract(epoch FROM now() - r.idle_since)::float8 END AS idle_ago
            FROM dlpipe.runs r CROSS JOIN LATERAL (\(SharedQueue.workerCountsSQL("r.id"))) c
            WHERE r.job_id = $1
            ORDER BY r.started_at DESC, r.id DESC
            """, [.int(job)]).rows
        let workerRows = try connection.execute(
            """
            SELECT x.run_id, x.worker_id, w.hostname, w.pid, coalesce(rw.finished, 0) AS finished,
              coalesce(rw.unchanged, 0) AS unchanged, coalesce(rw.failed, 0) AS failed, coalesce(rw.handled, 0) AS handled,
              coalesce(rw.skipped, 0) AS skipped, coalesce(rw.cancelled, 0) AS cancelled, coalesce(rw.bytes, 0) AS bytes
            FROM (
              -- A worker that joined the run and reported nothing yet is one
              -- of its workers too (0 counts), not missing from it.
              SELECT run_id, worker_id FROM dlpipe.run_workers
              UNION SELECT run_id, id FROM dlpipe.workers WHERE run_id IS NOT NULL
            ) x JOIN dlpipe.runs r ON r.id = x.run_id
            LEFT JOIN dlpipe.run_workers rw ON rw.run_id = x.run_id AND rw.worker_id = x.worker_id
            LEFT JOIN dlpipe.workers w ON w.id = x.worker_id
            WHERE r.job_id = $1
            ORDER BY x.run_id, x.worker_id
            """, [.int(job)]).rows
        var byRun: [Int64: [QueueRunWorker]] = [:]
        for row in workerRows {
            byRun[try row.int("run_id"), default: []].append(QueueRunWorker(
                id: try row.int("worker_id"), hostname: try row.optionalText("hostname"), pid: try row.optionalInt("pid"),
                finished: try row.int("finished"), unchanged: try row.int("unchanged"), failed: try row.int("failed"),
                handled: try row.int("handled"), skipped: try row.int("skipped"), cancelled: try row.int("cancelled"),
                bytes: try row.int("bytes")))
        }
        return try runs.map { row throws(PostgresError) in
            let id = try row.int("id")
            return QueueRunHistory(
                run: QueueRunStatus(
                    id: id, startedAgo: try row.double("started_ago"),
                    endedAgo: try QueueSnapshot.age(row, "ended_ago"), idleAgo: try QueueSnapshot.age(row, "idle_ago"),
                    exitCode: try row.optionalInt("exit_code"),
                    finished: try row.int("finished"), unchanged: try row.int("unchanged"),
                    failed: try row.int("failed"), handled: try row.int("handled"),
                    doneWorker: try row.optionalInt("done_worker")),
                skipped: try row.int("skipped"), cancelled: try row.int("cancelled"), bytes: try row.int("bytes"),
                retried: try row.int("retried"), workers: byRun[id] ?? [])
        }
    }
}
