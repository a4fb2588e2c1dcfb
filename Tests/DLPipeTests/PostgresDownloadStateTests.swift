import Foundation
import Testing
import TestSupport

@testable import DLPipe
@testable import DLPipeQueue

/// The per-URL state and `dl.store` of a shared job, in PostgreSQL, against
/// the tests' real server: what `StateStoreTests` asks of the SQLite state,
/// plus what sharing adds (two workers on one job, two jobs apart, a broken
/// connection, a database away for a while).
@Suite struct PostgresDownloadStateTests {
    let address: PostgresAddress

    /// One database for the suite, made and migrated once: the state is
    /// job-scoped, so each test takes jobs of its own. (A database per test,
    /// each made under the cluster's admin lock by a test's init on the test
    /// pool, held both threads of the pool for seconds in full runs.) Tests
    /// that take the whole database away make their own (`ownDatabase`).
    private static let database = Result { () throws -> String in
        let url = try PostgresCluster.shared().freshDatabase("state")
        try SchemaMigrator().migrate(PostgresConnection(PostgresAddress(url)))
        return url
    }

    init() throws {
        address = try PostgresAddress(Self.database.get())
    }

    private func connect() throws -> PostgresConnection { try PostgresConnection(address) }

    /// A job row, as a worker's `SharedQueue.open` makes it; the name made
    /// unique, so that a repeated test never meets an earlier run's rows.
    private func job(_ name: String, at address: PostgresAddress? = nil) throws -> Int64 {
        let unique = name + "-" + UUID().uuidString.prefix(8)
        return try SharedQueue.open(job: unique, limits: JobLimits(perHost: 2), on: PostgresConnection(address ?? self.address)).job
    }

    private func state(_ job: Int64, patience: Double = 10, at address: PostgresAddress? = nil) throws -> PostgresDownloadState {
        try PostgresDownloadState(address: address ?? self.address, job: job, patience: patience)
    }

    /// A database of the test's own, migrated, and its name.
    private func ownDatabase(_ label: String) throws -> (address: PostgresAddress, name: String) {
        let address = try PostgresAddress(try PostgresCluster.shared().freshDatabase(label))
        let connection = try PostgresConnection(address)
        try SchemaMigrator().migrate(connection)
        return (address, try connection.execute("SELECT current_database() AS name").rows[0].text("name"))
    }

    private func record(_ request: DownloadRequest, target: String?, status: DownloadRecord.Status = .finished) -> DownloadRecord {
        DownloadRecord(
            key: request.deduplicationKey, url: request.url, target: target, status: status, bytes: 5,
            total: 5, etag: "\"e\"", lastModified: nil, sha256: nil, mediaType: "text/html", attempts: 1, lastError: nil,
            updatedAt: 0)
    }

    private func count(_ sql: String, _ parameters: [PostgresValue] = []) throws -> Int64 {
        try connect().execute(sql, parameters).rows[0].int("n")
    }

    /// A connection to the cluster's own database, to do what an
    /// administrator (or a failing network) does to the test's database.
    private func admin() throws -> PostgresConnection {
        try PostgresConnection(PostgresAddress(PostgresCluster.shared().url(database: "postgres")))
    }

    // MARK: records

    @Test func everyFieldRoundTripsNilOnesToo() throws {
        let state = try state(try job("round"))
        // NULs (the key's separators) and non-ASCII in the key, the URL and the target.
        let full = DownloadRequest(url: "http://h/caf\u{E9}/\u{1F4E6}.bin", name: "n\u{E4}me", directory: "d\u{FC}r")
        let bare = DownloadRequest(url: "http://h/bare")
        #expect(full.deduplicationKey.contains("\u{0}"))
        let before = Date().timeIntervalSince1970
        let written = DownloadRecord(
            key: full.deduplicationKey, url: full.url, target: "d\u{FC}r/n\u{E4}me", status: .handled, bytes: 1 << 40,
            total: (1 << 40) + 1, etag: "W/\"\u{E9}t\"", lastModified: "Tue, 01 Dec 2026 00:00:00 GMT",
            sha256: String(repeating: "ab", count: 32), mediaType: "application/octet-stream", attempts: 7,
            lastError: "http 503: Service Unavailable", updatedAt: 0,
            placed: PlacedFile(path: "d\u{FC}r/n\u{E4}me", size: 1 << 40, inode: UInt64.max - 5, modified: 1_700_000_000_123_456_789))
        let empty = DownloadRecord(
            key: bare.deduplicationKey, url: bare.url, target: nil, status: .partial, bytes: 0, total: nil, etag: nil,
            lastModified: nil, sha256: nil, mediaType: nil, attempts: 0, lastError: nil, updatedAt: 0, placed: nil)
        let placedBare = DownloadRecord(
            key: "memory\u{0}http://h/m", url: "http://h/m", target: nil, status: .failed, bytes: 3, total: nil,
            etag: nil, lastModified: nil, sha256: nil, mediaType: nil, attempts: 1, lastError: nil, updatedAt: 0,
            placed: PlacedFile(path: "m", size: 3))
        try state.write([written, empty, placedBare], released: [])
        let after = Date().timeIntervalSince1970

        // Read by another state object: nothing comes from a cache.
        let reader = try self.state(state.job)
        for original in [written, empty, placedBare] {
            var got = try #require(try reader.record(key: original.key), Comment(rawValue: original.url))
            // The time of the write, on the database's clock (this machine's here).
            #expect(got.updatedAt >= before - 1 && got.updatedAt <= after + 1, "\(got.updatedAt) not in [\(before), \(after)]")
            got.updatedAt = 0
            #expect(got == original)
        }
        #expect(try reader.record(key: DownloadRequest(url: "http://h/other").deduplicationKey) == nil)
    }

    /// A file placed under its record's own target is stored as NULL in
    /// `placed_target` (schema version 9: the write after placing changes no
    /// indexed column), one placed elsewhere by its path; both read back as
    /// written, and both paths stay the job's files.
    @Test func aFilePlacedUnderItsTargetIsNotNamedTwice() throws {
        let state = try state(try job("placed"))
        let here = DownloadRequest(url: "http://h/here.bin")
        let moved = DownloadRequest(url: "http://h/moved.bin")
        var placedHere = record(here, target: "here.bin")
        placedHere.placed = PlacedFile(path: "here.bin", size: 5, inode: 9, modified: 1)
        var placedElsewhere = record(moved, target: "new/moved.bin", status: .partial)
        placedElsewhere.placed = PlacedFile(path: "old/moved.bin", size: 5, inode: 10, modified: 2)
        try state.write([placedHere, placedElsewhere], released: [])
        let stored = try connect().execute(
            "SELECT url, placed_target FROM dlpipe.url_facts WHERE job_id = $1 ORDER BY url", [.int(state.job)]
        ).rows.map { (try $0.text("url"), try $0.optionalText("placed_target")) }
        #expect(stored.map(\.0) == [here.url, moved.url])
        #expect(stored.map(\.1) == [nil, "old/moved.bin"])
        for original in [placedHere, placedElsewhere] {
            var got = try #require(try self.state(state.job).record(key: original.key))
            got.updatedAt = 0
            #expect(got == original)
        }
        for path in ["here.bin", "new/moved.bin", "old/moved.bin"] {
            #expect(try state.isDownloadFile(path), "\(path)")
        }
        #expect(try state.downloadFiles() == ["here.bin", "new/moved.bin", "old/moved.bin"])
        #expect(try !state.isDownloadFile("other.bin"))
    }

    @Test func aRecordReplacesItsKeysEarlierOne() throws {
        let state = try state(try job("replace"))
        let request = DownloadRequest(url: "http://h/x")
        var partial = record(request, target: "x", status: .partial)
        partial.etag = "\"old\""
        try state.write([partial], released: [])
        var finished = record(request, target: "x")
        finished.placed = PlacedFile(path: "x", size: 5, inode: 9, modified: 1)
        try state.write([finished], released: [])
        #expect(try state.record(key: request.deduplicationKey)?.status == .finished)
        #expect(try state.record(key: request.deduplicationKey)?.etag == "\"e\"")

        // Two records of one key in one batch: the later wins.
        var first = record(request, target: "x", status: .partial)
        first.attempts = 2
        var second = record(request, target: "x.1", status: .failed)
        second.attempts = 3
        try state.write([first, second], released: [])
        let read = try #require(try state.record(key: request.deduplicationKey))
        #expect(read.status == .failed && read.target == "x.1" && read.attempts == 3 && read.placed == nil)
        #expect(try count("SELECT count(*) AS n FROM dlpipe.url_facts WHERE job_id = $1", [.int(state.job)]) == 1)
    }

    /// Two workers of one job share records and `dl.store` values (a re-run
    /// from either asks conditionally, a cursor is shared); another job in
    /// the same database sees none of them.
    @Test func twoWorkersOfAJobShareAndTwoJobsStayApart() throws {
        let shared = try job("shared")
        let (first, second) = (try state(shared), try state(shared))
        let other = try state(try job("other"))
        let request = DownloadRequest(url: "http://h/a.bin")
        try first.write([record(request, target: "a.bin")], released: [])
        #expect(try second.record(key: request.deduplicationKey)?.target == "a.bin")
        #expect(try other.record(key: request.deduplicationKey) == nil)

        try second.setValue("\u{1F}feed\u{1F}cursor", "[\"i\",42]")
        #expect(try first.value("\u{1F}feed\u{1F}cursor") == "[\"i\",42]")
        try first.setValue("\u{1F}feed\u{1F}cursor", "[\"i\",43]")
        #expect(try second.value("\u{1F}feed\u{1F}cursor") == "[\"i\",43]")
        #expect(try other.value("\u{1F}feed\u{1F}cursor") == nil)
        try other.setValue("\u{1F}feed\u{1F}cursor", "1")
        #expect(try first.value("\u{1F}feed\u{1F}cursor") == "[\"i\",43]")
        #expect(try first.value("missing") == nil)

        // Bytes by key prefix, as UTF-8 (the key's U+001F and a non-ASCII value count as such).
        try first.setValue("\u{1F}feed\u{1F}n\u{E4}me", "\"\u{E9}\"")
        try first.setValue("\u{1F}feedx\u{1F}k", "1")
        let prefix = "\u{1F}feed\u{1F}"
        let expected = ("\u{1F}feed\u{1F}cursor" + "[\"i\",43]").utf8.count + ("\u{1F}feed\u{1F}n\u{E4}me" + "\"\u{E9}\"").utf8.count
        #expect(try second.storedBytes(keyPrefix: prefix) == expected)
        #expect(try other.storedBytes(keyPrefix: prefix) == ("\u{1F}feed\u{1F}cursor" + "1").utf8.count)
        #expect(try other.storedBytes(keyPrefix: "nothing") == 0)
    }

    @Test func hadRecordsIsFalseOnANewJobOnly() throws {
        let fresh = try job("fresh")
        let first = try state(fresh)
        #expect(!first.hadRecords)
        try first.setValue("k", "1")
        #expect(try !state(fresh).hadRecords, "a dl.store value is no download record")
        try first.write([record(DownloadRequest(url: "http://h/a"), target: "a")], released: [])
        #expect(!first.hadRecords, "what it was at open, even after a write")
        #expect(try state(fresh).hadRecords)
        #expect(try !state(try job("still-fresh")).hadRecords)
    }

    /// Runs belong to the worker, not to the state: nothing is written.
    @Test func runsAreLeftToTheWorker() throws {
        let state = try state(try job("runs"))
        #expect(try state.startRun() == 0)
        try state.endRun(0, summary: RunSummary())
        #expect(try count("SELECT count(*) AS n FROM dlpipe.runs WHERE job_id = $1", [.int(state.job)]) == 0)
    }

    // MARK: files

    /// As `StateStoreTests.aVersionThreeFileLearnsTheFilesScriptsWrite`: what
    /// scripts wrote, which files are downloads', and forgetting one.
    @Test func releasedWrittenAndDownloadFiles() throws {
        let shared = try job("files")
        let state = try state(shared)
        let other = try self.state(try job("files-other"))
        let done = DownloadRequest(url: "http://h/done.bin")
        let moved = DownloadRequest(url: "http://h/moved.bin")
        var placedElsewhere = record(moved, target: "new.bin", status: .partial)
        placedElsewhere.placed = PlacedFile(path: "moved.bin", size: 5, inode: 1)
        try state.write(
            [record(done, target: "done.bin"), placedElsewhere],
            released: [ReleasedFile(path: "old.bin", url: "http://u:p@h/old.bin", size: 4)])

        #expect(try state.downloadFiles() == ["done.bin", "new.bin", "moved.bin", "old.bin"])
        for path in ["done.bin", "new.bin", "moved.bin", "old.bin"] {
            #expect(try state.isDownloadFile(path), "\(path)")
            #expect(try !other.isDownloadFile(path), "\(path) is not the other job's")
        }
        #expect(try !state.isDownloadFile("index.json"))
        #expect(try other.downloadFiles().isEmpty)
        #expect(try connect().execute("SELECT url FROM dlpipe.released WHERE job_id = $1", [.int(shared)]).rows.map { try $0.text("url") }
            == ["http://***@h/old.bin"])

        #expect(try state.writer(of: "index.json") == nil)
        try state.setWriter(of: "index.json", to: "feed")
        #expect(try self.state(shared).writer(of: "index.json") == "feed")
        #expect(try other.writer(of: "index.json") == nil)
        try state.setWriter(of: "index.json", to: "other-script")
        #expect(try state.writer(of: "index.json") == "other-script")
        try state.forgetWritten("index.json")
        #expect(try state.writer(of: "index.json") == nil)

        try state.forgetDownloadFile("done.bin")
        #expect(try state.record(key: done.deduplicationKey) == nil)
        #expect(try !state.isDownloadFile("done.bin"))
        // A placed file forgets its download too (its target with it).
        try state.forgetDownloadFile("moved.bin")
        #expect(try state.record(key: moved.deduplicationKey) == nil)
        #expect(try !state.isDownloadFile("new.bin"))
        try state.forgetDownloadFile("old.bin")
        #expect(try state.downloadFiles().isEmpty)
    }

    // MARK: credentials

    /// A `user:pass@` URL: found again by its key, stored without the user
    /// part anywhere in the state's tables (the key holds a digest keyed
    /// with the job's secret); other credentials are another download.
    @Test func credentialsAreNotStored() throws {
        let shared = try job("creds")
        let state = try state(shared)
        let alice = DownloadRequest(url: "http://alice:hunter2@h/x.bin")
        let bob = DownloadRequest(url: "http://bob:swordfish@h/x.bin")
        // Keys whose URL is not their first part (a POST, a memory download).
        var post = DownloadRequest(url: "http://alice:hunter2@h/form")
        post.method = "POST"
        post.body = Array("q=1".utf8)
        let memory = DownloadRequest(url: "http://alice:hunter2@h/m", into: .memory)
        try state.write(
            [record(alice, target: "x.bin"), record(post, target: "form"), record(memory, target: nil)],
            released: [ReleasedFile(path: "old.bin", url: alice.url, size: 1)])
        for request in [alice, post, memory] {
            let read = try #require(try state.record(key: request.deduplicationKey))
            #expect(read.key == request.deduplicationKey)
            #expect(read.url == "http://***@" + request.url.split(separator: "@")[1])
        }
        #expect(try state.record(key: bob.deduplicationKey) == nil, "other credentials are another download")
        #expect(try self.state(shared).record(key: alice.deduplicationKey) != nil, "another worker keys with the same secret")

        // Nothing of the credentials in any row of the state's tables.
        let everything = try connect().execute("""
            SELECT string_agg(t::text, ' ') AS text FROM (
              SELECT encode(key, 'escape') || url || coalesce(target, '') AS t FROM dlpipe.url_facts WHERE job_id = $1
              UNION ALL SELECT path || url FROM dlpipe.released WHERE job_id = $1) rows
            """, [.int(shared)]).rows[0].text("text")
        #expect(!everything.contains("hunter2") && !everything.contains("alice"), "\(everything)")
        #expect(everything.contains("***~"))
        // The stored key, as a queue may key its own rows with it.
        let stored = state.storedKey(alice.deduplicationKey)
        #expect(try count(
            "SELECT count(*) AS n FROM dlpipe.url_facts WHERE job_id = $1 AND key = $2", [.int(shared), .bytes(stored)]) == 1)
        #expect(!String(decoding: stored, as: UTF8.self).contains("hunter2"))

        // Another job keys its digests with its own secret.
        let otherJob = try job("creds-other")
        try self.state(otherJob).write([record(alice, target: "x.bin")], released: [])
        let keys = try connect().execute(
            "SELECT encode(key, 'escape') AS k FROM dlpipe.url_facts WHERE url = 'http://***@h/x.bin' AND job_id IN ($1, $2) ORDER BY job_id",
            [.int(shared), .int(otherJob)]
        ).rows.map { try $0.text("k") }
        #expect(keys.count == 2 && keys[0] != keys[1], "\(keys)")
    }

    // MARK: faults

    /// A batch the database refuses (an attempt count past PostgreSQL's
    /// integer) leaves nothing of it: not the records before the bad one,
    /// not its released files. The error says what the database said.
    @Test func aFailedBatchLeavesNothingHalfWritten() throws {
        let state = try state(try job("atomic"))
        let good = (0..<3).map { record(DownloadRequest(url: "http://h/\($0)"), target: "\($0)") }
        var bad = record(DownloadRequest(url: "http://h/bad"), target: "bad")
        bad.attempts = Int(Int32.max) + 1
        #expect {
            try state.write(good + [bad], released: [ReleasedFile(path: "old", url: "http://h/old", size: 1)])
        } throws: { error in
            let message = (error as? StateFailure)?.message ?? ""
            return message.hasPrefix("cannot write the state in the queue's database at ") && message.contains("out of range")
        }
        #expect(try count("SELECT count(*) AS n FROM dlpipe.url_facts WHERE job_id = $1", [.int(state.job)]) == 0)
        #expect(try count("SELECT count(*) AS n FROM dlpipe.released WHERE job_id = $1", [.int(state.job)]) == 0)
        // The same batch without the bad record goes through whole.
        try state.write(good, released: [ReleasedFile(path: "old", url: "http://h/old", size: 1)])
        #expect(try count("SELECT count(*) AS n FROM dlpipe.url_facts WHERE job_id = $1", [.int(state.job)]) == 3)
        #expect(try state.isDownloadFile("old"))
    }

    /// PostgreSQL text holds no NUL: a server's odd ETag or error message is
    /// stored with U+FFFD in its place rather than blocking every later batch.
    @Test func aNulInFreeTextIsStoredReplaced() throws {
        let state = try state(try job("nul"))
        let request = DownloadRequest(url: "http://h/x")
        var odd = record(request, target: "x")
        odd.etag = "\"a\u{0}b\""
        odd.lastError = "bad\u{0}header"
        try state.write([odd], released: [])
        let read = try #require(try state.record(key: request.deduplicationKey))
        #expect(read.etag == "\"a\u{FFFD}b\"" && read.lastError == "bad\u{FFFD}header")
        // A dl.store key is the script's to choose: one with a NUL is refused
        // with a message that says why, and the state goes on.
        #expect {
            try state.setValue("\u{1F}job\u{1F}a\u{0}b", "1")
        } throws: { error in
            (error as? StateFailure)?.message.contains("holds a NUL character") == true
        }
        #expect(try count("SELECT count(*) AS n FROM dlpipe.store WHERE job_id = $1", [.int(state.job)]) == 0)
        try state.setValue("\u{1F}job\u{1F}ab", "1")
        #expect(try state.value("\u{1F}job\u{1F}ab") == "1")
    }

    /// The state's backend is terminated between two writes (what a server
    /// restart or a dropped connection does to it): the next call connects
    /// again and loses nothing.
    @Test func aBrokenConnectionLosesNoWrite() throws {
        let state = try state(try job("broken"))
        let (a, b) = (DownloadRequest(url: "http://h/a"), DownloadRequest(url: "http://h/b"))
        try state.write([record(a, target: "a")], released: [])
        let backend = try #require(state.serverPID)
        let admin = try admin()
        #expect(try admin.execute("SELECT pg_terminate_backend($1) AS done", [.int(Int64(backend))]).rows[0].bool("done"))
        try state.write([record(b, target: "b")], released: [])
        #expect(state.serverPID != backend, "a new connection")
        #expect(try state.record(key: a.deduplicationKey)?.target == "a")
        #expect(try state.record(key: b.deduplicationKey)?.target == "b")
        // Reads reconnect the same way.
        _ = try admin.execute("SELECT pg_terminate_backend($1)", [.int(Int64(try #require(state.serverPID)))])
        #expect(try state.value("k") == nil)
        try state.setValue("k", "1")
        #expect(try self.state(state.job).value("k") == "1")
    }

    /// The state's commits do not wait for the server's log flush (the SQLite
    /// state's `synchronous=NORMAL`), on its first connection and on every
    /// one it makes after a break; a write is still seen at once by another
    /// worker's state.
    @Test func theStateCommitsWithoutWaitingForTheFlushAfterAReconnectionToo() throws {
        let state = try state(try job("async"))
        // The tests' cluster turns it off for everyone: the state's own
        // connection must have set it itself (source "session").
        let setting = { () throws -> String in
            try state.call("read a setting") { connection throws(PostgresError) in
                let row = try connection.execute(
                    "SELECT setting || ' by ' || source AS value FROM pg_settings WHERE name = 'synchronous_commit'").rows[0]
                return try row.text("value")
            }
        }
        #expect(try setting() == "off by session")
        _ = try admin().execute("SELECT pg_terminate_backend($1)", [.int(Int64(try #require(state.serverPID)))])
        #expect(try setting() == "off by session", "a new connection gets the same setting")
        let request = DownloadRequest(url: "http://h/seen")
        try state.write([record(request, target: "seen")], released: [])
        #expect(try self.state(state.job).record(key: request.deduplicationKey)?.target == "seen")
    }

    /// The connection breaks while a write is in the middle of its statement
    /// (held up by a row lock another session holds): the write runs again
    /// on a new connection, waits for the lock like the first, and returns
    /// once its batch is written, whole.
    @Test func aWriteBrokenInTheMiddleIsRunAgain() async throws {
        let state = try state(try job("middle"))
        let request = DownloadRequest(url: "http://h/held")
        try state.write([record(request, target: "held", status: .partial)], released: [])
        let holder = try connect()
        try holder.run("BEGIN")
        _ = try holder.execute("SELECT 1 FROM dlpipe.url_facts WHERE job_id = $1 FOR UPDATE", [.int(state.job)])

        let finished = record(request, target: "held")
        let written = BlockingWork {
            try state.write([finished], released: [ReleasedFile(path: "old-held", url: request.url, size: 2)])
        }
        // Until a backend waits for the holder's lock, on the database's own
        // word (pg_blocking_pids): the write's, whichever connection it is on.
        // (Watching the state's PID of before the write missed it in loaded
        // full runs, three times in four.)
        let admin = try admin()
        let deadline = Date().addingTimeInterval(60)
        var waiter: Int64?
        while waiter == nil && Date() < deadline {
            waiter = try admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", [.int(Int64(holder.serverPID))]
            ).rows.first.map { try $0.int("pid") }
            if waiter == nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        let blocked = try #require(waiter, "the write never waited for the lock")
        _ = try admin.execute("SELECT pg_terminate_backend($1)", [.int(blocked)])
        try holder.run("COMMIT")
        try await written.value(seconds: 20, "the held write")
        #expect(state.serverPID.map(Int64.init) != blocked, "it ran again on a new connection")
        #expect(try state.record(key: request.deduplicationKey)?.status == .finished)
        #expect(try state.isDownloadFile("old-held"))
    }

    /// The database refuses connections for a second (as during a restart):
    /// a write made meanwhile waits, connects again once it can, and is
    /// written; it returns only then.
    @Test func aWriteWaitsOutAShortOutage() async throws {
        let own = try ownDatabase("outage")
        let state = try state(try job("outage", at: own.address), patience: 15, at: own.address)
        let admin = try admin()
        let database = try admin.quotedIdentifier(own.name)
        try admin.run("ALTER DATABASE \(database) ALLOW_CONNECTIONS false")
        _ = try admin.execute("SELECT pg_terminate_backend($1)", [.int(Int64(try #require(state.serverPID)))])
        let request = DownloadRequest(url: "http://h/during")
        let during = record(request, target: "during")
        // The write starts now and can only end once connections are allowed again, a second later.
        let write = BlockingWork { () throws -> (Date, Date) in
            let started = Date()
            try state.write([during], released: [])
            return (started, Date())
        }
        let reopen = BlockingWork { () throws -> Date in
            Thread.sleep(forTimeInterval: 1)
            try PostgresConnection(PostgresAddress(PostgresCluster.shared().url(database: "postgres")))
                .run("ALTER DATABASE \(database) ALLOW_CONNECTIONS true")
            return Date()
        }
        let reopened = try await reopen.value(seconds: 20, "allowing connections again")
        let (started, ended) = try await write.value(seconds: 20, "the write during the outage")
        #expect(started < reopened && ended >= reopened, "the write went through only once the database took connections again")
        #expect(try self.state(state.job, at: own.address).record(key: request.deduplicationKey)?.target == "during")
    }

    /// A database away for longer than the state's patience: the call fails
    /// with a message that says so and for how long it tried; nothing of the
    /// batch is written, and the same batch goes through once it is back.
    @Test func aDatabaseAwayPastThePatienceIsAFailure() async throws {
        let own = try ownDatabase("away")
        let state = try state(try job("away", at: own.address), patience: 1, at: own.address)
        let admin = try admin()
        let database = try admin.quotedIdentifier(own.name)
        try admin.run("ALTER DATABASE \(database) ALLOW_CONNECTIONS false")
        defer { try? admin.run("ALTER DATABASE \(database) ALLOW_CONNECTIONS true") }
        _ = try admin.execute("SELECT pg_terminate_backend($1)", [.int(Int64(try #require(state.serverPID)))])
        let request = DownloadRequest(url: "http://h/lost")
        let lost = record(request, target: "lost")
        // Timed on the writing thread: how long the state tried, not how long the test waited.
        let (message, took) = try await offThePool(seconds: 20, "the write that gives up") { () -> (String, Double) in
            let started = Date()
            do throws(StateFailure) {
                try state.write([lost], released: [])
                return ("", Date().timeIntervalSince(started))
            } catch {
                return (error.message, Date().timeIntervalSince(started))
            }
        }
        #expect(message.hasPrefix("cannot write the state: the queue's database at postgresql://"), "\(message)")
        #expect(message.contains("is unreachable: tried for 1.") && message.contains("not currently accepting connections"), "\(message)")
        #expect(took >= 1 && took < 8, "\(took) s")
        try admin.run("ALTER DATABASE \(database) ALLOW_CONNECTIONS true")
        try state.write([record(request, target: "lost")], released: [])
        #expect(try state.record(key: request.deduplicationKey)?.target == "lost")
    }

    @Test func anUnknownJobOrAnUnreachableDatabaseIsAClearFailure() throws {
        #expect {
            try state(987_654)
        } throws: { error in
            (error as? StateFailure)?.message.contains("the queue has no job with id 987654") == true
        }
        let nowhere = try PostgresAddress("postgresql://nobody@/none?host=/nonexistent-dlpipe-socket")
        let started = Date()
        #expect {
            try PostgresDownloadState(address: nowhere, job: 1)
        } throws: { error in
            (error as? StateFailure)?.message.hasPrefix("cannot open the state of job 1: cannot connect to postgresql://nobody@/none") == true
        }
        #expect(Date().timeIntervalSince(started) < 5, "a database down at start is not waited for")
    }

    // MARK: schema

    /// A database of schema version 1 (its url_facts without placed times)
    /// opens with its records; the missing time is nil until written.
    @Test func aVersionOneDatabaseIsMigratedAndKeepsItsFacts() throws {
        let url = try PostgresCluster.shared().freshDatabase("statev1")
        let old = try PostgresConnection(PostgresAddress(url))
        try SchemaMigrator(Array(QueueSchema.migrations.prefix(1))).migrate(old)
        let job = try SharedQueue.open(job: "v1", limits: JobLimits(perHost: 1), on: old).job
        let request = DownloadRequest(url: "http://h/v1.bin")
        try old.execute(
            """
            INSERT INTO dlpipe.url_facts (job_id, key, url, target, status, bytes, etag, placed_target, placed_size, placed_inode)
            VALUES ($1, $2, 'http://h/v1.bin', 'v1.bin', 'finished', 5, '"v1"', 'v1.bin', 5, 77)
            """, [.int(job), .bytes(Array(request.deduplicationKey.utf8))])
        let state = try PostgresDownloadState(address: PostgresAddress(url), job: job)
        #expect(state.hadRecords)
        var read = try #require(try state.record(key: request.deduplicationKey))
        #expect(read.etag == "\"v1\"" && read.placed == PlacedFile(path: "v1.bin", size: 5, inode: 77, modified: nil))
        read.placed?.modified = 42
        try state.write([read], released: [])
        #expect(try state.record(key: request.deduplicationKey)?.placed?.modified == 42)
        #expect(try old.execute("SELECT version FROM dlpipe.schema_version").rows[0].int("version") == Int64(QueueSchema.latest))
    }

    /// The state's lookups and writes are prepared once per connection; a
    /// connection whose server forgot them (DEALLOCATE ALL, DISCARD ALL: a
    /// pooler's reset) prepares them again instead of failing.
    @Test func aPreparedStatementTheServerForgotIsPreparedAgain() throws {
        let connection = try connect()
        let sql = "SELECT $1::int + 1 AS n"
        #expect(try connection.executePrepared("plus_one", sql, [.int(1)]).rows[0].int("n") == 2)
        #expect(try connection.executePrepared("plus_one", sql, [.int(2)]).rows[0].int("n") == 3)
        try connection.run("DEALLOCATE ALL")
        #expect(try connection.executePrepared("plus_one", sql, [.int(3)]).rows[0].int("n") == 4)
        #expect(try connection.execute("SELECT count(*) AS n FROM pg_prepared_statements").rows[0].int("n") == 1)
    }

    // MARK: speed

    /// 10,000 records written in batches of 100 (one statement each), then
    /// read back one by one (one round trip each), as an engine writes and a
    /// re-run reads them. The figures go to the log; docs keep them.
    @Test func tenThousandRecordsInBatchesOfAHundred() async throws {
        let state = try state(try job("speed"))
        let records = (0..<10_000).map { index in
            var saved = record(DownloadRequest(url: "http://h\(index % 7).test/files/\(index).bin"), target: "files/\(index).bin")
            saved.placed = PlacedFile(path: "files/\(index).bin", size: 5, inode: UInt64(index), modified: Int64(index))
            return saved
        }
        let (writing, reading, found) = try await offThePool(seconds: 120, "10,000 writes and reads") {
            let writeStart = Date()
            for start in stride(from: 0, to: records.count, by: 100) {
                try state.write(Array(records[start..<start + 100]), released: [])
            }
            let writing = Date().timeIntervalSince(writeStart)
            let readStart = Date()
            var found = 0
            for saved in records where try state.record(key: saved.key)?.placed == saved.placed { found += 1 }
            return (writing, Date().timeIntervalSince(readStart), found)
        }
        print(String(format: "PostgresDownloadState: 10,000 records written in batches of 100 in %.2f s (%.0f/s), read one by one in %.2f s (%.0f/s)",
                     writing, 10_000 / writing, reading, 10_000 / reading))
        #expect(found == 10_000)
        #expect(try count("SELECT count(*) AS n FROM dlpipe.url_facts WHERE job_id = $1", [.int(state.job)]) == 10_000)
    }
}
