import Foundation
import Testing
import TestSupport

@testable import DLPipe
@testable import DLPipeQueue

/// What `dlpipe status --queue` reads, against a real server: a job filled
/// through `SharedQueue` (adds, claims by two workers, failures, a worker
/// whose lease ran out, runs) is reported as it stands, times measured by
/// the database, and reading changes nothing: no take-back, no schema made,
/// no migration.
@Suite struct QueueReportTests {
    let url: String

    init() throws {
        url = try PostgresCluster.shared().freshDatabase("report")
    }

    private func connect() throws -> PostgresConnection { try PostgresConnection(PostgresAddress(url)) }

    private func report(_ reading: QueueReading<QueueReport>) throws -> QueueReport {
        guard case .found(let report) = reading else { throw Unexpected(description: "no report: \(reading)") }
        return report
    }

    private struct Unexpected: Error, CustomStringConvertible { let description: String }

    /// Seconds a loaded machine may take between setting a time and reading
    /// its age (the statements run back to back; the suite shares two cores
    /// with other builds). Live workers get a lease of an hour for the same
    /// reason: a 30 s lease ran out under load in a full run.
    private let slack = 300.0

    /// Ready rows of a host that a Retry-After (or a host delay) holds back
    /// wait for the host's `next_at`: they are scheduled, not ready (they
    /// were counted ready, though no worker could claim one).
    @Test func readyRowsOfAHeldHostAreScheduled() throws {
        let connection = try connect()
        try SchemaMigrator().migrate(connection)
        let queue = try SharedQueue.open(job: "held", limits: JobLimits(perHost: 3, hostDelay: 0, maxDownloads: 500), on: connection)
        _ = try queue.add(queuedRequests(6, hosts: ["a.test", "b.test"]), on: connection)
        try connection.execute(
            """
            INSERT INTO dlpipe.hosts (job_id, host, next_at) VALUES ($1, 'a.test', now() + interval '1 minute')
            ON CONFLICT (job_id, host) DO UPDATE SET next_at = excluded.next_at
            """, [.int(queue.job)])
        let report = try report(QueueReport.read(job: "held", on: connection))
        #expect(report.job.counts.ready == 3 && report.job.counts.scheduled == 3, "\(report.job.counts)")
    }

    @Test func aFilledJobIsReportedAsItStands() throws {
        let connection = try connect()
        try SchemaMigrator().migrate(connection)
        let queue = try SharedQueue.open(job: "mirror", limits: JobLimits(perHost: 3, hostDelay: 0, maxDownloads: 500), on: connection)
        _ = try queue.add(queuedRequests(10, hosts: ["a.test", "b.test"]), on: connection)
        _ = try queue.add(queuedRequests(1, hosts: ["c.test"], prefix: "later", delay: 3600), on: connection)
        let alive = try queue.register(hostname: "web1", pid: 101, lease: 3600, on: connection)
        let frozen = try queue.register(hostname: "web2", pid: 202, lease: 2, on: connection)
        let first = try queue.claim(worker: alive, limit: 3, on: connection)
        let second = try queue.claim(worker: frozen, limit: 2, on: connection)
        #expect(first.count == 3 && second.count == 2)
        // Two failures, one statement each, so that the second is the most recent.
        #expect(try queue.report([ClaimReport(id: first[0].id, token: first[0].token, outcome: .failed, error: "HTTP 404 Not Found")], on: connection).count == 1)
        #expect(try queue.report([ClaimReport(id: first[1].id, token: first[1].token, outcome: .failed, error: "timeout\nafter 30 s")], on: connection).count == 1)
        #expect(try queue.report([ClaimReport(id: first[2].id, token: first[2].token, outcome: .finished)], on: connection).count == 1)
        // The frozen worker's lease ran out five seconds ago (database clock); nobody took its claims back yet.
        try connection.execute(
            "UPDATE dlpipe.workers SET lease_until = now() - interval '5 seconds', heartbeat_at = now() - interval '7 seconds' WHERE id = $1",
            [.int(frozen)])
        try connection.execute(
            """
            INSERT INTO dlpipe.runs (job_id, started_at, ended_at, exit_code, finished, unchanged, failed, handled, done_worker)
            VALUES ($1, now() - interval '1 hour', now() - interval '50 minutes', 1, 7, 2, 1, 1, $2)
            """, [.int(queue.job), .int(alive)])
        try connection.execute(
            "INSERT INTO dlpipe.runs (job_id, started_at, finished) VALUES ($1, now() - interval '10 seconds', 1)", [.int(queue.job)])

        let report = try report(QueueReport.read(job: "mirror", on: connection))
        #expect(report.schemaVersion == QueueSchema.latest)
        #expect(report.job.name == "mirror")
        #expect(report.perHost == 3 && report.hostDelay == 0 && report.maxDownloads == 500)
        var counts = QueueCounts()
        counts.ready = 5
        counts.scheduled = 1
        counts.running = 2
        counts.transferring = 2
        counts.failed = 2
        counts.finished = 1
        #expect(report.job.counts == counts)
        #expect(report.job.workersAlive == 1 && report.job.workersExpired == 1)

        #expect(report.workers.map(\.id) == [alive, frozen])
        let (live, dead) = (report.workers[0], report.workers[1])
        #expect(live.hostname == "web1" && live.pid == 101 && !live.leaseExpired && live.running == 0 && live.transferring == 0)
        #expect(live.leaseLeft > 3600 - slack && live.leaseLeft <= 3600, "\(live)")
        #expect(live.heartbeatAgo >= 0 && live.heartbeatAgo < slack, "\(live)")
        #expect(dead.hostname == "web2" && dead.pid == 202 && dead.leaseExpired && dead.running == 2 && dead.transferring == 2 && dead.heldAhead == 0)
        #expect(dead.leaseLeft <= -5 && dead.leaseLeft > -5 - slack, "\(dead)")
        #expect(dead.heartbeatAgo >= 7 && dead.heartbeatAgo < 7 + slack, "\(dead)")

        // In flight: the frozen worker's two claims, on the hosts they hold.
        #expect(report.inFlight == 2)
        #expect(report.hosts.map(\.inFlight).reduce(0, +) == 2)
        #expect(report.hostsInFlight == Int64(report.hosts.count))
        #expect(Set(report.hosts.map(\.host)) == Set(second.map(\.host)))
        for host in report.hosts {
            let waiting = try connection.execute(
                "SELECT count(*) AS n FROM dlpipe.downloads WHERE job_id = $1 AND host = $2 AND status = 'ready'",
                [.int(queue.job), .text(host.host)]).rows[0].int("n")
            #expect(host.waiting == waiting)
        }

        #expect(report.failures.map(\.url) == [first[1].url, first[0].url])
        #expect(report.failures.map(\.lastError) == ["timeout\nafter 30 s", "HTTP 404 Not Found"])
        #expect(report.failures.allSatisfy { $0.attempts == 1 && ($0.endedAgo ?? -1) >= 0 && ($0.endedAgo ?? slack) < slack })

        #expect(report.runs.count == 2)
        let (open, ended) = (report.runs[0], report.runs[1])
        #expect(open.endedAgo == nil && open.exitCode == nil && open.finished == 1 && open.doneWorker == nil)
        #expect(open.startedAgo >= 10 && open.startedAgo < 10 + slack, "\(open)")
        #expect(ended.exitCode == 1 && ended.finished == 7 && ended.unchanged == 2 && ended.failed == 1 && ended.handled == 1)
        #expect(ended.doneWorker == alive)
        #expect(ended.startedAgo >= 3600 && ended.startedAgo < 3600 + slack, "\(ended)")
        #expect(ended.endedAgo.map { $0 >= 3000 && $0 < 3000 + slack } == true, "\(ended)")

        // Reading took nothing back: the dead worker still holds its claims.
        #expect(try connection.execute("SELECT stopped_at IS NULL AS live FROM dlpipe.workers WHERE id = $1", [.int(frozen)]).rows[0].bool("live"))
        #expect(try connection.execute(
            "SELECT count(*) AS n FROM dlpipe.downloads WHERE worker_id = $1 AND status = 'running'", [.int(frozen)]).rows[0].int("n") == 2)
        // And its transaction is over: a write on the same connection works.
        try connection.execute("CREATE TEMPORARY TABLE after_report (n int)")
    }

    @Test func failuresAreTheTwentyMostRecentWithTheirCount() throws {
        let connection = try connect()
        try SchemaMigrator().migrate(connection)
        let queue = try SharedQueue.open(job: "many", limits: JobLimits(perHost: 100), on: connection)
        _ = try queue.add(queuedRequests(25, hosts: ["a.test"]), on: connection)
        let worker = try queue.register(hostname: "w", pid: 1, lease: 3600, on: connection)
        let claims = try queue.claim(worker: worker, limit: 25, on: connection)
        #expect(claims.count == 25)
        // In five batches, oldest first: each batch ends at a later now().
        for batch in stride(from: 0, to: 25, by: 5) {
            let reports = claims[batch..<batch + 5].map { ClaimReport(id: $0.id, token: $0.token, outcome: .failed, error: "error of \($0.url)") }
            #expect(try queue.report(reports, on: connection).count == 5)
        }
        let report = try report(QueueReport.read(job: "many", on: connection))
        #expect(report.job.counts.failed == 25)
        #expect(report.failures.count == QueueReport.failureLimit)
        let newest = Set(claims[5...].map(\.url))
        #expect(Set(report.failures.map(\.url)) == newest)
        // Newest first: the last batch, the highest id of it first (claims come in id order).
        #expect(report.failures.first?.url == claims[24].url)
        #expect(report.failures.allSatisfy { $0.lastError == "error of \($0.url)" })
        #expect(Set(report.failures.prefix(5).map(\.url)) == Set(claims[20...].map(\.url)))
    }

    @Test func theJobListHasEveryJobWithItsCountsAndWorkers() throws {
        let connection = try connect()
        try SchemaMigrator().migrate(connection)
        let busy = try SharedQueue.open(job: "busy", limits: JobLimits(perHost: 2), on: connection)
        _ = try SharedQueue.open(job: "amber", limits: JobLimits(perHost: 2), on: connection)
        _ = try busy.add(queuedRequests(4, hosts: ["a.test"]), on: connection)
        let worker = try busy.register(hostname: "w", pid: 1, lease: 3600, on: connection)
        let dead = try busy.register(hostname: "w", pid: 2, lease: 2, on: connection)
        let stopped = try busy.register(hostname: "w", pid: 3, lease: 3600, on: connection)
        try busy.takeBack(worker: stopped, on: connection)  // it left: not counted
        try connection.execute("UPDATE dlpipe.workers SET lease_until = now() - interval '1 second' WHERE id = $1", [.int(dead)])
        #expect(try busy.claim(worker: worker, limit: 1, on: connection).count == 1)

        guard case .found(let list) = try QueueJobList.read(on: connection) else {
            Issue.record("no list")
            return
        }
        #expect(list.schemaVersion == QueueSchema.latest)
        #expect(list.jobs.map(\.name) == ["amber", "busy"])
        #expect(list.jobs[0].counts == QueueCounts())
        #expect(list.jobs[0].workersAlive == 0 && list.jobs[0].workersExpired == 0)
        #expect(list.jobs[1].counts.ready == 3 && list.jobs[1].counts.running == 1)
        #expect(list.jobs[1].workersAlive == 1 && list.jobs[1].workersExpired == 1)
    }

    @Test func anUnknownNameListsTheNamesThatExist() throws {
        let connection = try connect()
        try SchemaMigrator().migrate(connection)
        #expect(try QueueReport.read(job: "mirror", on: connection) == .unknownJob(names: [], count: 0))
        for name in ["zeta", "alpha", "mid"] {
            _ = try SharedQueue.open(job: name, limits: JobLimits(perHost: 1), on: connection)
        }
        #expect(try QueueReport.read(job: "mirror", on: connection) == .unknownJob(names: ["alpha", "mid", "zeta"], count: 3))
        #expect(try QueueReport.read(job: "Alpha", on: connection) == .unknownJob(names: ["alpha", "mid", "zeta"], count: 3))
    }

    /// A database no worker started with is reported as such, and left as it
    /// was: reading creates no schema.
    @Test func aDatabaseWithoutAQueueIsSaidSoAndLeftAlone() throws {
        let connection = try connect()
        #expect(try QueueReport.read(job: "mirror", on: connection) == .noQueue)
        #expect(try QueueJobList.read(on: connection) == .noQueue)
        #expect(try connection.execute("SELECT count(*) AS n FROM pg_namespace WHERE nspname = 'dlpipe'").rows[0].int("n") == 0)
        // A schema whose first migration never finished (no version row) holds no queue either.
        try connection.run("CREATE SCHEMA dlpipe; CREATE TABLE dlpipe.schema_version (only_row boolean PRIMARY KEY, version integer NOT NULL)")
        #expect(try QueueJobList.read(on: connection) == .noQueue)
        try connection.execute("CREATE TEMPORARY TABLE after_report (n int)")
    }

    @Test func aNewerSchemaIsRefusedAsTheMigratorRefusesIt() throws {
        let connection = try connect()
        try SchemaMigrator().migrate(connection)
        try connection.execute("UPDATE dlpipe.schema_version SET version = $1", [.int(Int64(QueueSchema.latest + 1))])
        for read in [{ try QueueJobList.read(on: connection) as Any }, { try QueueReport.read(job: "x", on: connection) as Any }] {
            do {
                _ = try read()
                Issue.record("a newer schema was read")
            } catch let error as PostgresError {
                #expect(error.kind == .incompatible)
                #expect(error.message.contains("version \(QueueSchema.latest + 1), newer than this dlpipe knows"), "\(error)")
            }
        }
        // Rolled back: the connection takes writes again, and nothing was migrated.
        try connection.execute("CREATE TEMPORARY TABLE after_report (n int)")
        #expect(try connection.execute("SELECT version FROM dlpipe.schema_version").rows[0].int("version") == Int64(QueueSchema.latest + 1))
    }

    /// A database at the first version (older than this build once the
    /// schema grows) is read as it is and not migrated.
    @Test func theFirstSchemaVersionIsReadWithoutMigrating() throws {
        let connection = try connect()
        try SchemaMigrator(Array(QueueSchema.migrations.prefix(1))).migrate(connection)
        let queue = try SharedQueue.open(job: "old", limits: JobLimits(perHost: 1), on: connection)
        _ = try queue.add(queuedRequests(2, hosts: ["a.test"]), on: connection)
        let report = try report(QueueReport.read(job: "old", on: connection))
        #expect(report.schemaVersion == 1)
        #expect(report.job.counts.ready == 2)
        #expect(try connection.execute("SELECT version FROM dlpipe.schema_version").rows[0].int("version") == 1)
    }
}
