import DLPipe
import Foundation
import Synchronization

/// The state of a job of the shared queue (`--queue`), in PostgreSQL: what
/// `StateStore` keeps in `DIR/.dlpipe/state.db` for one machine, kept here for
/// every worker of the job, so that a re-run from any worker asks
/// conditionally (the ETag another worker got last time) and a `dl.store`
/// cursor is shared. `StateStore` is the reference for what each call means.
///
/// Rows are scoped to the job row `job` (`SharedQueue.open`); records live
/// in `url_facts`, keyed by the request's `deduplicationKey` as bytes (it
/// holds NUL separators, which PostgreSQL text cannot). Every statement is
/// one short autocommit statement, a batch of records included (one
/// statement whose parts commit together), and every one is idempotent, so
/// that a call the connection broke under is simply run again on a new
/// connection (`ReconnectingConnection`): a server restart or a dropped
/// network loses no write, and a database away for longer than `patience`
/// is a `StateFailure` that says so.
///
/// Credentials are kept as `StateStore` keeps them: URLs stored redacted,
/// a key's `user:password` replaced by a digest keyed with the job's own
/// secret (`jobs.credential_key`). The credentials a worker needs to send
/// live with the queued request (`downloads.secret`), nowhere else.
///
/// Calls block their thread until the database answers: the engine makes
/// them from its state thread, one at a time. A lock still serialises them,
/// because libpq connections are not thread-safe and a script's thread may
/// share the object.
package final class PostgresDownloadState: DownloadState, @unchecked Sendable {
    // @unchecked: `connection` is touched only under `lock`; the rest never changes.
    private let lock = NSLock()
    /// Records read ahead for claimed downloads (`prime`), each used once.
    let readAhead = Mutex<[String: DownloadRecord?]>([:])
    private let connection: ReconnectingConnection
    private let credentials: StoredCredentials
    private let address: PostgresAddress
    /// The job row whose records these are.
    package let job: Int64
    /// Whether the job had records when this state was opened. An engine
    /// reads it once, when it is made, and one that makes one download per
    /// key (`deduplicatesWholeRun`) then asks no lookups in that run, not
    /// even for keys other workers record meanwhile: a claim taken over from
    /// a worker that died after placing its file would not find that file's
    /// record. A queue worker's engine should therefore ask always (let keys
    /// repeat, as a claim that comes back for a retry must anyway).
    package let hadRecords: Bool
    /// The server makes its commits durable (or not: the state's connection
    /// commits without waiting for the flush), never a worker's syncfs.
    package var durableBySyncOfOutput: Bool { false }

    /// The durability of the SQLite state (`synchronous=NORMAL`): a commit is
    /// visible to every worker and survives a killed worker at once, without
    /// waiting for the server's log flush; a crash of the server itself may
    /// lose the last fraction of a second of commits (at most three times
    /// `wal_writer_delay`), as a power loss may lose the SQLite state's last
    /// commits, and the next run recognises those files the same way. The
    /// queue's own statements (claims, reports, leases) keep waiting for the
    /// flush: they are the job's truth for every worker. Measured on bench set
    /// 8 (docs/design/queue-schema.md).
    static let sessionSetup = "SET synchronous_commit = off"

    /// Opens the state of job row `job` at `address`, with a connection of
    /// its own (named "dlpipe state" in `pg_stat_activity`). Makes sure the
    /// schema is the latest (`SchemaMigrator`, a no-op when it is) and gives
    /// the job its credential key when it has none. Connection failures here
    /// are not waited out: a database that is down at start is reported at
    /// once. `patience`: seconds a later call keeps reconnecting.
    package convenience init(address: PostgresAddress, job: Int64, patience: Double = 30) throws(StateFailure) {
        let connection: ReconnectingConnection
        do {
            connection = try Self.connection(address, patience: patience)
        } catch {
            throw Self.failure("open the state of job \(job)", address: address, error)
        }
        try self.init(connection: connection, job: job)
    }

    /// The state's own connection, open (a queue worker opens it before it
    /// registers, with its other connections: one the server refuses is
    /// then refused before the worker does anything).
    package static func connection(_ address: PostgresAddress, patience: Double) throws(PostgresError) -> ReconnectingConnection {
        try ReconnectingConnection(address, patience: patience, applicationName: "dlpipe state", sessionSetup: sessionSetup)
    }

    /// Opens the state of job row `job` on `connection` (made by `connection(_:patience:)`).
    package init(connection: ReconnectingConnection, job: Int64) throws(StateFailure) {
        self.job = job
        self.address = connection.address
        self.connection = connection
        do {
            let setUp = try connection.run { connection throws(PostgresError) -> (key: [UInt8], any: Bool) in
                try SchemaMigrator().migrate(connection)
                return (try Self.credentialKey(job: job, on: connection), try Self.hasRecords(job: job, on: connection))
            }
            credentials = StoredCredentials(secret: setUp.key)
            hadRecords = setUp.any
        } catch {
            throw Self.failure("open the state of job \(job)", address: address, error)
        }
    }

    /// The job's credential key; made (32 random bytes) when it has none.
    /// Two workers opening at once both offer one; `coalesce` keeps the first.
    private static func credentialKey(job: Int64, on connection: PostgresConnection) throws(PostgresError) -> [UInt8] {
        let found = try connection.execute("SELECT credential_key FROM dlpipe.jobs WHERE id = $1", [.int(job)]).rows
        guard let row = found.first else {
            throw PostgresError(.unexpected, "the queue has no job with id \(job)")
        }
        if try row.optionalText("credential_key") != nil { return try row.bytes("credential_key") }
        let fresh = StoredCredentials(hex: StoredCredentials.newSecretHex()).secret
        return try connection.execute(
            """
            UPDATE dlpipe.jobs SET credential_key = coalesce(credential_key, $2) WHERE id = $1
            RETURNING credential_key
            """, [.int(job), .bytes(fresh)]
        ).rows[0].bytes("credential_key")
    }

    private static func hasRecords(job: Int64, on connection: PostgresConnection) throws(PostgresError) -> Bool {
        try connection.execute(
            "SELECT EXISTS (SELECT 1 FROM dlpipe.url_facts WHERE job_id = $1) AS any", [.int(job)]
        ).rows[0].bool("any")
    }

    /// The server process of the state's connection, nil while it has none
    /// (tests terminate it to break the connection).
    package var serverPID: Int32? { lock.withLock { connection.serverPID } }

    // MARK: records

    package func record(key: String) throws(StateFailure) -> DownloadRecord? {
        if let answer = primed(key) { return answer }
        let stored = storedKey(key)
        let rows = try call("read the state") { connection throws(PostgresError) in
            try connection.executePrepared(
                "dlpipe_state_record", "SELECT \(Self.columns) FROM dlpipe.url_facts WHERE job_id = $1 AND key = $2",
                [.int(job), .bytes(stored)]
            ).rows
        }
        guard let row = rows.first else { return nil }
        do {
            var found = try Self.record(row)
            found.key = key
            return found
        } catch {
            throw Self.failure("read the state", address: address, error)
        }
    }

    /// Writes the records (each replacing its key's earlier one; of two
    /// records of one key in the batch the later wins) and the released
    /// files in one statement: all of them or none. The rows go in key
    /// order, so that two workers writing overlapping batches lock them in
    /// one order and never deadlock.
    ///
    /// One statement a batch, not one a record, and both prepared once per
    /// connection: 10,000 records in batches of 100 take 0.6 to 0.75 s on the
    /// tests' cluster (unix socket, fsync off, a loaded 2-core machine),
    /// 13,000 to 16,700 records a second; reading them back one by one
    /// (`record(key:)`, one round trip each) 0.7 to 0.8 s, up to 1.9 s under
    /// load (PostgresDownloadStateTests.tenThousandRecordsInBatchesOfAHundred).
    /// Unprepared, the same took 0.7 to 0.9 s and 1.5 to 2.6 s.
    package func write(_ records: [DownloadRecord], released: [ReleasedFile]) throws(StateFailure) {
        guard !records.isEmpty || !released.isEmpty else { return }
        let parameters = batchParameters(records, released)
        _ = try call("write the state") { connection throws(PostgresError) in
            try connection.executePrepared("dlpipe_state_write", Self.writeStatement, parameters)
        }
    }

    /// The write's parameters: one array per column, the last record of each key.
    private func batchParameters(_ records: [DownloadRecord], _ released: [ReleasedFile]) -> [PostgresValue] {
        var latest: [[UInt8]: DownloadRecord] = [:]
        for record in records { latest[storedKey(record.key)] = record }
        let keys = Array(latest.keys)
        let rows = keys.map { latest[$0]! }
        let optional = { (values: [Int64?]) -> PostgresValue in .textArray(values.map { $0.map(String.init) }) }
        var files: [String: ReleasedFile] = [:]
        for file in released { files[file.path] = file }
        let paths = files.keys.sorted()
        return [
            .int(job), .bytesArray(keys), .textArray(rows.map { Self.storable(credentials.url($0.url)) }),
            .textArray(rows.map(\.target)), .textArray(rows.map(\.status.rawValue)), .intArray(rows.map(\.bytes)),
            optional(rows.map(\.total)), .textArray(rows.map { Self.storable($0.etag) }),
            .textArray(rows.map { Self.storable($0.lastModified) }), .textArray(rows.map { Self.storable($0.sha256) }),
            .textArray(rows.map { Self.storable($0.mediaType) }), .intArray(rows.map { Int64($0.attempts) }),
            .textArray(rows.map { Self.storable($0.lastError) }), .textArray(rows.map(Self.placedElsewhere)),
            optional(rows.map { $0.placed?.size }), optional(rows.map { $0.placed?.inode.map { Int64(bitPattern: $0) } }),
            optional(rows.map { $0.placed?.modified }),
            .textArray(paths), .textArray(paths.map { credentials.url(files[$0]!.url) }),
            .intArray(paths.map { files[$0]!.size }),
        ]
    }

    /// The placed file's path as `placed_target` holds it: NULL when it is
    /// the record's own target (as nearly always), so that the write after a
    /// file is placed changes no indexed column (schema version 9); `record`
    /// reads it back. Every query by path looks at `target` as well.
    private static func placedElsewhere(_ record: DownloadRecord) -> String? {
        guard let placed = record.placed, placed.path != record.target else { return nil }
        return placed.path
    }

    /// Free text from a server (an ETag, an error message) with its NUL
    /// characters, which PostgreSQL text cannot hold, as U+FFFD: one odd
    /// header must not keep every later batch from being written.
    private static func storable(_ text: String?) -> String? {
        guard let text, text.utf8.contains(0) else { return text }
        return text.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}")
    }

    /// Records and released files, upserted by one statement (its two parts
    /// commit together). `updated_at` is the database's time of the write,
    /// as `StateStore` writes its own clock's.
    private static let writeStatement = """
        WITH input AS (
          SELECT * FROM unnest($2::bytea[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[],
                               $8::text[], $9::text[], $10::text[], $11::text[], $12::int[], $13::text[],
                               $14::text[], $15::bigint[], $16::bigint[], $17::bigint[])
            AS t(key, url, target, status, bytes, total, etag, last_modified, sha256, media_type, attempts,
                 last_error, placed_target, placed_size, placed_inode, placed_mtime_ns)
        ),
        facts AS (
          INSERT INTO dlpipe.url_facts AS f
            (job_id, key, url, target, status, bytes, total, etag, last_modified, sha256, media_type, attempts,
             last_error, placed_target, placed_size, placed_inode, placed_mtime_ns, updated_at)
          SELECT $1, key, url, target, status, bytes, total, etag, last_modified, sha256, media_type, attempts,
                 last_error, placed_target, placed_size, placed_inode, placed_mtime_ns, now()
          FROM input ORDER BY key
          ON CONFLICT (job_id, key) DO UPDATE SET
            url = excluded.url, target = excluded.target, status = excluded.status, bytes = excluded.bytes,
            total = excluded.total, etag = excluded.etag, last_modified = excluded.last_modified,
            sha256 = excluded.sha256, media_type = excluded.media_type, attempts = excluded.attempts,
            last_error = excluded.last_error, placed_target = excluded.placed_target,
            placed_size = excluded.placed_size, placed_inode = excluded.placed_inode,
            placed_mtime_ns = excluded.placed_mtime_ns, updated_at = excluded.updated_at
        ),
        files AS (
          INSERT INTO dlpipe.released (job_id, path, url, size)
          SELECT $1, path, url, size FROM unnest($18::text[], $19::text[], $20::bigint[]) AS r(path, url, size)
          ORDER BY path
          ON CONFLICT (job_id, path) DO UPDATE SET url = excluded.url, size = excluded.size
        )
        SELECT 1
        """

    static let columns = """
        url, target, status, bytes, total, etag, last_modified, sha256, media_type, attempts, last_error,
        extract(epoch FROM updated_at)::float8 AS updated, placed_target, placed_size, placed_inode, placed_mtime_ns
        """

    static func record(_ row: PostgresRow) throws(PostgresError) -> DownloadRecord {
        let placed: PlacedFile?
        // Placed under its own target when only the size says a file was
        // placed (`placedElsewhere`); rows of versions before 9 name it.
        let size = try row.optionalInt("placed_size")
        var path = try row.optionalText("placed_target")
        if path == nil, size != nil { path = try row.optionalText("target") }
        if let path {
            placed = PlacedFile(
                path: path, size: size ?? 0,
                inode: try row.optionalInt("placed_inode").map { UInt64(bitPattern: $0) },
                modified: try row.optionalInt("placed_mtime_ns"))
        } else {
            placed = nil
        }
        return DownloadRecord(
            key: "", url: try row.text("url"), target: try row.optionalText("target"),
            status: DownloadRecord.Status(rawValue: try row.text("status")) ?? .failed, bytes: try row.int("bytes"),
            total: try row.optionalInt("total"), etag: try row.optionalText("etag"),
            lastModified: try row.optionalText("last_modified"), sha256: try row.optionalText("sha256"),
            mediaType: try row.optionalText("media_type"), attempts: Int(try row.int("attempts")),
            lastError: try row.optionalText("last_error"), updatedAt: try row.double("updated"), placed: placed)
    }

    /// Runs are the worker's (`QueueWorker` keeps them in `dlpipe.runs`, one
    /// per run of the whole job, however many workers and engines take part),
    /// not the state's: an engine's run here is one worker's share of it, and
    /// recording it would make a second, partial count. So nothing is written.
    package func startRun() throws(StateFailure) -> Int64 { 0 }

    /// See `startRun`: the worker records the run's end and counts.
    package func endRun(_ id: Int64, summary: RunSummary) throws(StateFailure) {}

    // MARK: plumbing

    /// The key as stored, as bytes: the user part of its URL replaced by
    /// its keyed digest. The URL is the key's part with a scheme, which is
    /// not always its first (a POST's key starts with the method and the
    /// body's digest, a memory download's with "memory"), so each part is
    /// redacted on its own. A queue that keys its rows by request can use
    /// it too, so that the credentials stay in `downloads.secret` alone.
    package func storedKey(_ key: String) -> [UInt8] {
        // Bytes, not Foundation's `contains`, which searched by Unicode rules:
        // two keys per download pass here.
        guard key.utf8.contains(UInt8(ascii: "@")) else { return Array(key.utf8) }
        let parts = key.split(separator: "\u{0}", omittingEmptySubsequences: false)
        return Array(parts.map { $0.contains("://") ? credentials.key(String($0)) : String($0) }.joined(separator: "\u{0}").utf8)
    }

    /// Runs `statement` under the lock, reconnecting as needed; its failure
    /// worded for people ("cannot write the state: ...").
    func call<T>(_ what: String, _ statement: (PostgresConnection) throws(PostgresError) -> T) throws(StateFailure) -> T {
        lock.lock()
        defer { lock.unlock() }
        do {
            return try connection.run(statement)
        } catch {
            throw Self.failure(what, address: address, error)
        }
    }

    private static func failure(_ what: String, address: PostgresAddress, _ error: PostgresError) -> StateFailure {
        // A database that stayed away (the message names it and says for how
        // long it was tried), or that cannot be reached at all (libpq's
        // message names it): the address once is enough.
        if error.isConnectionLoss,
            error.message.hasPrefix(ReconnectingConnection.unreachable) || error.message.hasPrefix("cannot connect to ")
        {
            return StateFailure(message: "cannot \(what): \(error.description)")
        }
        return StateFailure(message: "cannot \(what) in the queue's database at \(address): \(error.description)")
    }
}
