import DLPipe
import Synchronization

/// Lookups read ahead. The engine looks a download's record up when the
/// download starts, one round trip each on its state thread; a queue worker
/// knows which downloads are coming the moment it claims them, and reads all
/// their records in one statement (`prime`). Each read-ahead answer is used
/// once: a claimed download's record is not written by anyone else while the
/// claim holds, and the engine's own writes go through `write` later.
extension PostgresDownloadState {
    /// Reads the records of `keys` (the engine's keys) ahead of their lookups.
    /// A failure reads nothing ahead: the lookups then ask one by one.
    package func prime(keys: [String]) {
        guard !keys.isEmpty else { return }
        var byStored: [[UInt8]: String] = [:]
        for key in keys { byStored[storedKey(key)] = key }
        guard let rows = try? call("read the state", { connection throws(PostgresError) in
            // One index lookup per key, whatever the table's statistics say:
            // `key = ANY($2)` let the planner, on a table not analyzed yet (a
            // new job's, for its first minute), scan all of the job's rows in
            // each read-ahead. A LATERAL subquery with a LIMIT is not pulled
            // up into a join, so it can only run as a lookup per key.
            // Prepared: one statement for each claim the worker makes.
            try connection.executePrepared(
                "dlpipe_state_prime",
                """
                SELECT f.* FROM unnest($2::bytea[]) AS wanted(key) CROSS JOIN LATERAL (
                  SELECT key, \(Self.columns) FROM dlpipe.url_facts WHERE job_id = $1 AND key = wanted.key LIMIT 1
                ) f
                """,
                [.int(job), .bytesArray(Array(byStored.keys))]
            ).rows
        }) else { return }
        var found: [String: DownloadRecord?] = [:]
        for key in keys { found[key] = .some(nil) }
        for row in rows {
            guard let stored = try? row.bytes("key"), let key = byStored[stored], var record = try? Self.record(row) else { continue }
            record.key = key
            found[key] = record
        }
        readAhead.withLock { $0.merge(found) { _, new in new } }
    }

    /// The read-ahead answer for `key`, used once; nil when there is none.
    func primed(_ key: String) -> DownloadRecord?? {
        readAhead.withLock { $0.removeValue(forKey: key) }
    }

    /// `DownloadState.readAhead`: the engine takes a claimed download's
    /// record from here without a trip to the state thread.
    package func readAhead(key: String) -> DownloadRecord?? { primed(key) }
}
