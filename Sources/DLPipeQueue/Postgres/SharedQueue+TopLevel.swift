import DLPipe
import Foundation

/// A job's top-level adds, sent once per run (docs/scale-out.md, "A run, `done`
/// and the exit code"): every worker runs the job file's top level, and sending
/// all its adds from each would be 40,000 rows for 10,000 downloads with 4
/// workers. A worker
/// that queued them all for the run records their digest in its row of the
/// run; a later worker whose top level adds the same (the same digest) reads
/// their ids instead of sending them again. A worker that died in the middle
/// of its adds recorded nothing, so the next one sends them all; one whose
/// top level adds anything else (another script, other variables) sends its
/// own. Sending them is idempotent either way.
extension SharedQueue {
    /// The digest of a top level's adds: every field of every row, in order.
    package static func topLevelDigest(_ requests: [QueuedRequest]) -> [UInt8] {
        let hasher = SHA256Hasher()
        func field(_ bytes: [UInt8]) {
            // Length first, so that no two lists of fields hash alike.
            var count = UInt64(bytes.count).littleEndian
            withUnsafeBytes(of: &count) { hasher.update($0) }
            bytes.withUnsafeBytes { hasher.update($0) }
        }
        for request in requests {
            field(request.key)
            field(Array(request.url.utf8))
            field(Array(request.host.utf8))
            field(Array(String(request.priority).utf8))
            field(Array(request.request.utf8))
            field(request.secret.map { [1] + Array($0.utf8) } ?? [0])
            field(Array(String(request.delay).utf8))
        }
        let hex = Array(hasher.finalHex().utf8)
        return stride(from: 0, to: hex.count, by: 2).map { UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
    }

    /// The ids of `requests` when a worker already queued a top level of
    /// this `digest` whole for `run`, in order; nil when none did, or when a
    /// row is not there as that add left it (then the caller sends them).
    package func queuedTopLevel(_ requests: [QueuedRequest], digest: [UInt8], run: Int64, on connection: PostgresConnection) throws(PostgresError) -> [Int64]? {
        guard !requests.isEmpty else { return [] }
        let recorded = try connection.execute(
            "SELECT EXISTS (SELECT 1 FROM dlpipe.run_workers WHERE run_id = $1 AND top_level = $2) AS recorded",
            [.int(run), .bytes(digest)]
        ).rows[0].bool("recorded")
        guard recorded else { return nil }
        // A row of this run, or one still waiting, running or paused from
        // before it (its add then found it as it is and queued nothing).
        let rows = try connection.execute(
            """
            SELECT d.id FROM unnest($2::bytea[]) WITH ORDINALITY AS k(key, position)
            CROSS JOIN LATERAL (  -- a lookup per key (see PostgresDownloadState.prime)
              SELECT d.id, d.run_id, d.status FROM dlpipe.downloads d WHERE d.job_id = $1 AND d.key = k.key LIMIT 1
            ) d
            WHERE d.run_id = $3 OR d.status IN ('ready', 'running', 'paused')
            ORDER BY k.position
            """, [.int(job), .bytesArray(requests.map(\.key)), .int(run)]
        ).rows
        guard rows.count == requests.count else { return nil }
        var ids: [Int64] = []
        ids.reserveCapacity(rows.count)
        for row in rows { ids.append(try row.int("id")) }
        return ids
    }

    /// Runs `body` (the look for a record, the adds, the record) while no
    /// other worker does it for the same top level of the same run: workers
    /// that cron starts at one moment would otherwise all send theirs, each
    /// locking the others' rows. A session advisory lock keyed by the digest
    /// and the run: a worker that dies while it holds it lets it go with its
    /// session, and the next finds no record and sends them all.
    ///
    /// Waited for at most `patience` seconds (tried every 50 ms), then `body`
    /// runs without it (sending is idempotent): a transaction-mode pooler
    /// may keep the lock on a server session that no worker owns any more.
    package func oneTopLevelAtATime<T>(
        digest: [UInt8], run: Int64, patience: Double = 30, on connection: PostgresConnection, _ body: () throws(PostgresError) -> T
    ) throws(PostgresError) -> T {
        var mixed = UInt64(bitPattern: run) &* 0x9E37_79B9_7F4A_7C15
        for byte in digest.prefix(8) { mixed = (mixed << 8 | mixed >> 56) ^ UInt64(byte) }
        let key = Int64(bitPattern: mixed)
        let deadline = QueueClock.now() + patience
        var locked = false
        while true {
            locked = try connection.execute("SELECT pg_try_advisory_lock($1) AS locked", [.int(key)]).rows[0].bool("locked")
            if locked || QueueClock.now() >= deadline { break }
            usleep(50_000)
        }
        defer { if locked { _ = try? connection.execute("SELECT pg_advisory_unlock($1)", [.int(key)]) } }
        return try body()
    }

    /// Records that `worker` queued a top level of `digest` whole for `run`.
    package func recordTopLevel(digest: [UInt8], run: Int64, worker: Int64, on connection: PostgresConnection) throws(PostgresError) {
        try connection.execute(
            """
            INSERT INTO dlpipe.run_workers (run_id, worker_id, top_level) VALUES ($1, $2, $3)
            ON CONFLICT (run_id, worker_id) DO UPDATE SET top_level = excluded.top_level
            """, [.int(run), .int(worker), .bytes(digest)])
    }
}
