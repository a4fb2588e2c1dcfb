import DLPipe

/// Controls passed on between workers: a handler's `dl.pause`, `dl.resume`
/// or `dl.cancel` of a download another worker holds reaches that worker by
/// a NOTIFY (`QueueSchema.controlInfix`), which acts on it in its engine.
extension SharedQueue {
    /// Tells the live worker other than `worker` that holds download `id`
    /// (running or paused) to apply `control` to it; whether one does.
    package func forward(_ control: QueueControl, of id: Int64, from worker: Int64, on connection: PostgresConnection) throws(PostgresError) -> Bool {
        try connection.execute(
            """
            WITH holder AS (
              SELECT d.worker_id FROM dlpipe.downloads d JOIN dlpipe.workers w ON w.id = d.worker_id
              WHERE d.job_id = $1 AND d.id = $2 AND d.status IN ('running', 'paused') AND d.worker_id <> $3
                AND w.stopped_at IS NULL AND w.lease_until > now()
            ),
            sent AS (
              SELECT pg_notify('\(QueueSchema.workChannel)',
                $1::text || '\(QueueSchema.controlInfix)' || $4 || ' ' || holder.worker_id::text || ' ' || $2::text)
              FROM holder
            )
            SELECT count(*) AS sent FROM sent
            """, [.int(job), .int(id), .int(worker), .text(control.rawValue)]
        ).rows[0].int("sent") > 0
    }
}
