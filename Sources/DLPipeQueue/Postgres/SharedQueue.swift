import DLPipe

/// The statements of the shared queue for one job: add, claim, report,
/// heartbeat, take back. Each is one short autocommit statement; none holds a
/// transaction open while a transfer runs. The calls block their thread
/// until the database answers: run them on a `PostgresSession`'s queue.
///
/// docs/design/queue-schema.md explains the tables and why each statement is shaped so.
package struct SharedQueue: Sendable {
    /// The job's row id.
    package let job: Int64
    /// The job-wide limits as the job's row holds them after `open`.
    package var limits = JobLimits(perHost: 2)

    /// Finds or makes the job called `name` and sets its job-wide limits
    /// (`find`, then `applying`).
    package static func open(job name: String, limits: JobLimits, on connection: PostgresConnection) throws(PostgresError) -> SharedQueue {
        let (queue, created) = try find(job: name, limits: limits, on: connection)
        return try queue.applying(limits, created: created, on: connection)
    }

    /// Finds the job called `name`, its limits as its row holds them, or makes
    /// it with all of `limits`; and whether this call made it. An existing
    /// job's limits are left as they are: a worker changes them only once it
    /// is sure to work for the job (`applying`, after the directory's checks),
    /// so that one refused for its directory changes nothing its live workers
    /// claim under.
    package static func find(job name: String, limits: JobLimits, on connection: PostgresConnection) throws(PostgresError) -> (queue: SharedQueue, created: Bool) {
        let row = try connection.execute(
            """
            INSERT INTO dlpipe.jobs (name, per_host, host_delay, max_downloads)
            VALUES ($1, $2, make_interval(secs => $3), $4)
            ON CONFLICT (name) DO UPDATE SET name = excluded.name
            RETURNING id, per_host, extract(epoch FROM host_delay)::float8 AS host_delay, max_downloads,
                      (xmax = 0) AS created
            """,
            [.text(name), .int(Int64(max(1, limits.perHost))), .double(max(0, limits.hostDelay)),
             limits.maxDownloads.map { .int(Int64($0)) } ?? .null]
        ).rows[0]
        var queue = SharedQueue(job: try row.int("id"))
        queue.limits = try limitsOf(row)
        return (queue, try row.bool("created"))
    }

    /// The queue with its job's limits set from `limits`: those `limits` says
    /// were given (the others stay as the job has them), and `max_downloads`
    /// always (the job file's own). A job this worker `created` has them all already.
    package func applying(_ limits: JobLimits, created: Bool, on connection: PostgresConnection) throws(PostgresError) -> SharedQueue {
        guard !created else { return self }
        let rows = try connection.execute(
            """
            UPDATE dlpipe.jobs SET
              per_host = CASE WHEN $5 THEN $2 ELSE per_host END,
              host_delay = CASE WHEN $6 THEN make_interval(secs => $3) ELSE host_delay END,
              max_downloads = $4
            WHERE id = $1
            RETURNING per_host, extract(epoch FROM host_delay)::float8 AS host_delay, max_downloads
            """,
            [.int(job), .int(Int64(max(1, limits.perHost))), .double(max(0, limits.hostDelay)),
             limits.maxDownloads.map { .int(Int64($0)) } ?? .null,
             .bool(limits.givesPerHost), .bool(limits.givesHostDelay)]
        ).rows
        guard let first = rows.first else { throw PostgresError(.unexpected, "the queue has no job with id \(job)") }
        var queue = self
        queue.limits = try Self.limitsOf(first)
        return queue
    }

    private static func limitsOf(_ row: PostgresRow) throws(PostgresError) -> JobLimits {
        JobLimits(
            perHost: Int(try row.int("per_host")), hostDelay: try row.double("host_delay"),
            maxDownloads: try row.optionalInt("max_downloads").map(Int.init))
    }

    // MARK: workers

    /// Registers a worker with a lease of `lease` seconds (at least 2) from
    /// now; `follows` for a `--follow` worker.
    package func register(
        hostname: String, pid: Int32, lease: Double, follows: Bool = false, on connection: PostgresConnection
    ) throws(PostgresError) -> Int64 {
        try connection.execute(
            """
            INSERT INTO dlpipe.workers (job_id, hostname, pid, lease, lease_until, follows)
            VALUES ($1, $2, $3, make_interval(secs => $4), now() + make_interval(secs => $4), $5)
            RETURNING id
            """, [.int(job), .text(hostname), .int(Int64(pid)), .double(lease), .bool(follows)]
        ).rows[0].int("id")
    }

    /// Extends the worker's lease to a whole lease from now (database clock)
    /// and returns its length in seconds; nil when the worker was declared
    /// dead meanwhile (its claims are gone: it must not place their files).
    package func heartbeat(worker: Int64, on connection: PostgresConnection) throws(PostgresError) -> Double? {
        try connection.execute(
            """
            UPDATE dlpipe.workers SET heartbeat_at = now(), lease_until = now() + lease
            WHERE id = $1 AND job_id = $2 AND stopped_at IS NULL
            RETURNING extract(epoch FROM lease)::float8 AS lease
            """, [.int(worker), .int(job)]
        ).rows.first?.double("lease")
    }

    /// Declares dead every worker of the job whose lease ran out (database
    /// clock), or only `worker` when given (a worker leaving), and puts their
    /// running downloads back to ready, their hosts' slots free.
    /// A download taken back keeps its `run_at`, so it keeps its place in
    /// line instead of going behind everything added since.
    /// Returns how many downloads went back.
    ///
    /// With `waitingAtMost` seconds, the statement waits no longer than that
    /// for a row lock and returns 0 when it would wait longer: a worker that
    /// froze inside a transaction holds its claims' rows until the server ends
    /// its session, and the heartbeat that calls this must not wait for that.
    @discardableResult
    package func takeBack(worker: Int64? = nil, waitingAtMost: Double? = nil, on connection: PostgresConnection) throws(PostgresError) -> Int {
        guard let waitingAtMost else {
            return try retryingDeadlocks(on: connection) { () throws(PostgresError) in try takeBackNow(worker: worker, on: connection) }
        }
        do {
            return try retryingDeadlocks(on: connection) { () throws(PostgresError) in
                try connection.transaction { () throws(PostgresError) in
                    try connection.run("SET LOCAL lock_timeout = \(max(1, Int(waitingAtMost * 1000)))")
                    return try takeBackNow(worker: worker, on: connection)
                }
            }
        } catch where error.sqlState == PostgresError.lockNotAvailable {
            return 0
        }
    }

    /// The last error of a download its worker held past its run's end
    /// (paused, in a `--follow` worker) when that worker stopped or died.
    package static let endedRunError = "its run ended while its worker kept it paused, and that worker stopped; the next run that adds it queues it again"

    /// The take-back statement; a deadlock aborts it (its caller runs it again).
    private func takeBackNow(worker: Int64?, on connection: PostgresConnection) throws(PostgresError) -> Int {
        Int(try connection.execute(
            """
            WITH dead AS (
              UPDATE dlpipe.workers w
              SET stopped_at = now(), stop_reason = CASE WHEN $2::bigint IS NULL THEN 'lease expired' ELSE 'left' END
              WHERE w.id IN (
                SELECT id FROM dlpipe.workers
                WHERE job_id = $1 AND stopped_at IS NULL
                  AND (CASE WHEN $2::bigint IS NULL THEN lease_until < now() ELSE id = $2::bigint END)
                FOR UPDATE SKIP LOCKED)
              RETURNING w.id
            ),
            held AS (
              SELECT d.id, d.slot_host,
                EXISTS (SELECT 1 FROM dlpipe.runs r WHERE r.id = d.run_id AND r.ended_at IS NOT NULL) AS run_ended
              FROM dlpipe.downloads d JOIN dead ON d.worker_id = dead.id
              WHERE d.status IN ('running', 'paused')
              FOR NO KEY UPDATE OF d
            ),
            back AS (
              -- A claim held ahead that never started made no request: its
              -- attempt is not kept (schema version 8). A row whose run ended
              -- (a paused one a --follow worker kept) is no later run's work:
              -- made ready, the next run fetched it whatever its top level
              -- added. It ends, and the run that adds it again queues it.
              UPDATE dlpipe.downloads d
              SET status = CASE WHEN held.run_ended THEN 'cancelled' ELSE 'ready' END,
                  worker_id = NULL, claim_token = NULL, ahead = false,
                  attempts = CASE WHEN d.ahead THEN greatest(0, d.attempts - 1) ELSE d.attempts END,
                  slot_host = CASE WHEN held.run_ended THEN NULL ELSE d.slot_host END,
                  secret = CASE WHEN held.run_ended THEN NULL ELSE d.secret END,
                  ended_at = CASE WHEN held.run_ended THEN now() ELSE d.ended_at END,
                  last_error = CASE WHEN held.run_ended THEN '\(Self.endedRunError)' ELSE d.last_error END
              FROM held WHERE d.id = held.id
              RETURNING d.id, held.slot_host
            ),
            -- A row whose transfer ended gave its slot back then (slot_host
            -- NULL, as the row's lock shows it): it gives none here.
            slots AS (
              UPDATE dlpipe.hosts h SET in_flight = h.in_flight - c.n
              FROM (SELECT slot_host, count(*)::int AS n FROM back WHERE slot_host IS NOT NULL GROUP BY slot_host) c
              WHERE h.job_id = $1 AND h.host = c.slot_host
            )
            SELECT count(*) AS n FROM back
            """, [.int(job), worker.map { .int($0) } ?? .null]
        ).rows[0].int("n"))
    }

    // MARK: queue

    /// Queues `requests` for any worker. The same key added twice (by this
    /// worker or another) is one row: the first add queues it. Returns the
    /// ids of the rows this call added, by key; the keys missing were queued
    /// before. One NOTIFY goes out for the batch when it added anything.
    package func add(_ requests: [QueuedRequest], on connection: PostgresConnection) throws(PostgresError) -> [[UInt8]: Int64] {
        guard !requests.isEmpty else { return [:] }
        let rows = try connection.execute(
            """
            WITH input AS (
              SELECT * FROM unnest($2::bytea[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[], $8::float8[])
                WITH ORDINALITY AS t(key, url, host, priority, request, secret, delay, position)
            ),
            new_hosts AS (
              INSERT INTO dlpipe.hosts (job_id, host)
              SELECT DISTINCT $1::bigint, host FROM input ORDER BY 2
              ON CONFLICT DO NOTHING
            ),
            added AS (
              INSERT INTO dlpipe.downloads (job_id, key, url, host, priority, request, secret, run_at)
              SELECT $1, key, url, host, priority, request::jsonb, secret::jsonb, now() + make_interval(secs => delay)
              FROM input ORDER BY position
              ON CONFLICT (job_id, key) DO NOTHING
              RETURNING id, key
            ),
            notified AS (
              SELECT pg_notify('\(QueueSchema.workChannel)', $1::text) FROM (SELECT 1 FROM added LIMIT 1) anything
            )
            SELECT id, key, (SELECT count(*) FROM notified) AS notified FROM added
            """,
            [.int(job), .bytesArray(requests.map(\.key)), .textArray(requests.map(\.url)),
             .textArray(requests.map(\.host)), .intArray(requests.map { Int64($0.priority) }),
             .textArray(requests.map(\.request)), .textArray(requests.map(\.secret)),
             .textArray(requests.map { String(max(0, $0.delay)) })]
        ).rows
        var added: [[UInt8]: Int64] = [:]
        for row in rows { added[try row.bytes("key")] = try row.int("id") }
        return added
    }

    /// Seconds until a ready download of the job may be claimed (its
    /// `run_at` and its host's `next_at` both come) on a host with a free
    /// slot: 0 when one may be now, nil when there is none. A worker waits
    /// that long for its next claim instead of its poll interval, so that
    /// host delays and retries are kept to the moment, not to the next poll.
    /// Nil while the job is paused: nothing comes due until it is resumed
    /// (its NOTIFY wakes the workers).
    package func nextDue(on connection: PostgresConnection) throws(PostgresError) -> Double? {
        try connection.executePrepared(
            "dlpipe_next_due",
            """
            SELECT greatest(0, due.wait) AS wait FROM (
              SELECT extract(epoch FROM min(greatest(h.next_at, r.run_at)) - now())::float8 AS wait
              FROM dlpipe.jobs j JOIN dlpipe.hosts h ON h.job_id = j.id
              CROSS JOIN LATERAL (
                SELECT min(d.run_at) AS run_at FROM dlpipe.downloads d
                WHERE d.job_id = $1 AND d.host = h.host AND d.status = 'ready'
              ) r
              WHERE j.id = $1 AND j.paused_at IS NULL AND \(QueueSchema.openRunNotCancelled) AND h.in_flight < j.per_host AND r.run_at IS NOT NULL
            ) due WHERE due.wait IS NOT NULL
            """, [.int(job)]
        ).rows.first?.optionalDouble("wait")
    }

    /// Claims up to `limit` ready downloads for `worker`, never more in flight
    /// per host than the job's `per_host` across all workers: the rows of the
    /// hosts it takes from are locked (`FOR UPDATE SKIP LOCKED`: hosts another
    /// claim is taking from are skipped, not waited for), their `in_flight`
    /// read under the lock and raised in the same statement. Highest priority
    /// first, then the hosts served least recently; with a host delay, one
    /// download per host and claim. A worker declared dead claims nothing,
    /// and no worker claims while the job is paused (`dlpipe queue pause`).
    package func claim(worker: Int64, limit: Int, on connection: PostgresConnection) throws(PostgresError) -> [ClaimedDownload] {
        let rows = try connection.executePrepared(
            "dlpipe_claim",
            """
            WITH job AS (
              SELECT j.per_host, j.host_delay FROM dlpipe.jobs j
              WHERE j.id = $1 AND j.paused_at IS NULL AND \(QueueSchema.openRunNotCancelled) AND EXISTS (
                SELECT 1 FROM dlpipe.workers w WHERE w.id = $2 AND w.job_id = $1 AND w.stopped_at IS NULL)
            ),
            free_hosts AS (
              SELECT h.host, h.in_flight, h.last_claim_at, top.priority
              FROM job, dlpipe.hosts h
              CROSS JOIN LATERAL (
                SELECT d.priority FROM dlpipe.downloads d
                WHERE d.job_id = $1 AND d.host = h.host AND d.status = 'ready' AND d.run_at <= now()
                ORDER BY d.priority DESC LIMIT 1
              ) top
              WHERE h.job_id = $1 AND h.in_flight < job.per_host AND h.next_at <= now()
              ORDER BY top.priority DESC, h.last_claim_at, h.host
              LIMIT $3
              FOR UPDATE OF h SKIP LOCKED
            ),
            candidates AS (
              SELECT d.id, f.host, d.priority, f.last_claim_at,
                     row_number() OVER (PARTITION BY f.host ORDER BY d.priority DESC, d.run_at, d.id) AS turn
              FROM job, free_hosts f
              CROSS JOIN LATERAL (
                SELECT d.id, d.priority, d.run_at FROM dlpipe.downloads d
                WHERE d.job_id = $1 AND d.host = f.host AND d.status = 'ready' AND d.run_at <= now()
                ORDER BY d.priority DESC, d.run_at, d.id
                -- No more than the claim can take: each row locked here writes
                -- a lock to the log and marks the row, taken or not, and other
                -- workers' claims skip it until this one commits.
                LIMIT least($3, CASE WHEN job.host_delay > '0' THEN 1 ELSE job.per_host - f.in_flight END)
                FOR UPDATE OF d SKIP LOCKED
              ) d
            ),
            picked AS (
              SELECT id, host FROM candidates
              ORDER BY priority DESC, turn, last_claim_at, host
              LIMIT $3
            ),
            claimed AS (
              UPDATE dlpipe.downloads d
              SET status = 'running', worker_id = $2, claim_token = nextval('dlpipe.claim_tokens'),
                  slot_host = p.host, claimed_at = now(), attempts = d.attempts + 1
              FROM picked p WHERE d.id = p.id
              RETURNING d.id, d.claim_token, d.key, d.url, d.host, d.priority, d.request::text AS request,
                        d.secret::text AS secret, d.attempts, d.run_at
            ),
            slots AS (
              UPDATE dlpipe.hosts h
              SET in_flight = h.in_flight + c.n, last_claim_at = now(),
                  next_at = CASE WHEN job.host_delay > '0' THEN now() + job.host_delay ELSE h.next_at END
              FROM job, (SELECT host, count(*)::int AS n FROM claimed GROUP BY host) c
              WHERE h.job_id = $1 AND h.host = c.host
            )
            -- In the order the claim went by (ids follow the keys, not the adds).
            SELECT c.*, (SELECT per_host FROM job) AS per_host FROM claimed c ORDER BY priority DESC, run_at, id
            """, [.int(job), .int(worker), .int(Int64(max(0, limit)))]
        ).rows
        return try Self.claimed(rows)
    }

    /// The claims a claim statement returned (`RETURNING` id, claim_token,
    /// key, url, host, priority, request, secret, attempts).
    static func claimed(_ rows: [PostgresRow]) throws(PostgresError) -> [ClaimedDownload] {
        var claims: [ClaimedDownload] = []
        claims.reserveCapacity(rows.count)
        for row in rows {
            claims.append(ClaimedDownload(
                id: try row.int("id"), token: try row.int("claim_token"), key: try row.bytes("key"),
                url: try row.text("url"), host: try row.text("host"), priority: Int(try row.int("priority")),
                request: try row.text("request"), secret: try row.optionalText("secret"),
                attempts: Int(try row.int("attempts")),
                perHost: row.columns.has("per_host") ? try row.optionalInt("per_host").map(Int.init) : nil))
        }
        return claims
    }

    /// Runs `statement` again when the server broke a deadlock by aborting
    /// it: two batches of reports can lock the same host rows in different
    /// orders, and the aborted one changed nothing. Inside a transaction the
    /// whole transaction was aborted: the error goes to its caller, which
    /// runs the transaction again (`QueueLink.run`); running the statement
    /// alone again would only meet "current transaction is aborted".
    func retryingDeadlocks<T>(on connection: PostgresConnection, _ statement: () throws(PostgresError) -> T) throws(PostgresError) -> T {
        var attempt = 0
        while true {
            do {
                return try statement()
            } catch where error.isTransient && attempt < 5 && !connection.inTransaction {
                attempt += 1
            }
        }
    }
}
