import DLPipe

/// A download a worker transfers now (its claim holds a host slot), for the
/// fleet's web view: which worker fetches what.
package struct QueueTransfer: Sendable, Equatable {
    package let worker: Int64
    package let id: Int64
    /// Without credentials (the queue keeps none in `url`).
    package let url: String
    package let host: String
    package let attempts: Int64
}

extension QueueTransfer {
    /// Transfers listed at most per job (the counts cover all).
    package static let limit = 200

    /// The transfers of the job called `name`, by worker, in one read-only
    /// snapshot; empty when there is no such job.
    package static func read(job name: String, on connection: PostgresConnection) throws(PostgresError) -> QueueReading<[QueueTransfer]> {
        try QueueSnapshot.reading(connection) { _ throws(PostgresError) -> QueueReading<[QueueTransfer]> in
            let rows = try connection.execute(
                """
                SELECT d.worker_id, d.id, d.url, d.host, d.attempts
                FROM dlpipe.downloads d JOIN dlpipe.jobs j ON j.id = d.job_id
                WHERE j.name = $1 AND d.status = 'running' AND d.slot_host IS NOT NULL
                ORDER BY d.worker_id, d.id
                LIMIT $2
                """, [.text(name), .int(Int64(limit))]
            ).rows
            return .found(try rows.map { row throws(PostgresError) in
                QueueTransfer(
                    worker: try row.optionalInt("worker_id") ?? 0, id: try row.int("id"), url: try row.text("url"),
                    host: try row.text("host"), attempts: try row.int("attempts"))
            })
        }
    }
}
