import DLPipe
import Foundation

/// A worker's claims outside the claim loop: a cancel of a waiting download,
/// claims whose answer was lost, the workers that are live.
extension SharedQueue {
    /// Cancels a download that waits in the queue (no worker holds it); its
    /// credentials go with it, as with every end (`report`). Also tells
    /// whether `worker` holds it (running under a claim of its own): then it
    /// is that worker's to cancel.
    package func cancelQueued(_ id: Int64, run: Int64? = nil, worker: Int64 = 0, on connection: PostgresConnection) throws(PostgresError) -> (cancelled: CancelledInQueue?, heldBy: Bool) {
        let rows = try connection.execute(
            """
            WITH cancelled AS (
              UPDATE dlpipe.downloads SET status = 'cancelled', ended_at = now(), secret = NULL
              WHERE job_id = $1 AND id = $2 AND status = 'ready' RETURNING id, url, request::text AS request, attempts
            ),
            counted AS (
              INSERT INTO dlpipe.run_workers AS r (run_id, worker_id, cancelled)
              SELECT $3::bigint, $4::bigint, count(*) FROM cancelled
              WHERE $3::bigint IS NOT NULL HAVING count(*) > 0
              ON CONFLICT (run_id, worker_id) DO UPDATE SET cancelled = r.cancelled + excluded.cancelled
            )
            SELECT url, request, attempts FROM cancelled
            """, [.int(job), .int(id), run.map { .int($0) } ?? .null, .int(worker)]
        ).rows
        if let row = rows.first {
            return (CancelledInQueue(url: try row.text("url"), request: try row.text("request"), attempts: Int(try row.int("attempts"))), false)
        }
        // A statement of its own, so a snapshot of its own: the update above
        // waited for a claim that held the row locked (FOR UPDATE SKIP
        // LOCKED, not committed yet) and then found it running, but a part
        // of the same statement would still see it ready, as before that
        // claim. This one sees the claim.
        let held = try connection.execute(
            "SELECT 1 FROM dlpipe.downloads WHERE job_id = $1 AND id = $2 AND status = 'running' AND worker_id = $3",
            [.int(job), .int(id), .int(worker)]
        ).rows.isEmpty == false
        return (nil, held)
    }

    /// Puts back to ready the downloads that `worker` holds under tokens it
    /// does not know: a claim whose answer was lost with the connection.
    @discardableResult
    package func releaseUnknownClaims(worker: Int64, known: [Int64], on connection: PostgresConnection) throws(PostgresError) -> Int {
        try connection.execute(
            """
            WITH back AS (
              UPDATE dlpipe.downloads d
              SET status = 'ready', worker_id = NULL, claim_token = NULL, ahead = false,
                  attempts = CASE WHEN d.ahead THEN greatest(0, d.attempts - 1) ELSE d.attempts END
              WHERE d.job_id = $1 AND d.worker_id = $2 AND d.status = 'running' AND NOT (d.claim_token = ANY($3::bigint[]))
              RETURNING d.slot_host
            ),
            slots AS (
              UPDATE dlpipe.hosts h SET in_flight = h.in_flight - c.n
              FROM (SELECT slot_host, count(*)::int AS n FROM back WHERE slot_host IS NOT NULL GROUP BY slot_host) c
              WHERE h.job_id = $1 AND h.host = c.slot_host
            )
            SELECT count(*) AS n FROM back
            """, [.int(job), .int(worker), .intArray(known)]
        ).rows[0].int("n").asInt
    }

    /// The job's workers that are not stopped (their part files are theirs).
    package func liveWorkers(on connection: PostgresConnection) throws(PostgresError) -> Set<Int64> {
        var live = Set<Int64>()
        for row in try connection.execute(
            "SELECT id FROM dlpipe.workers WHERE job_id = $1 AND stopped_at IS NULL", [.int(job)]
        ).rows {
            live.insert(try row.int("id"))
        }
        return live
    }
}
