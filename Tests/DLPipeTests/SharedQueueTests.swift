import Foundation
import Synchronization
import Testing
import TestSupport

@testable import DLPipe
@testable import DLPipeQueue

/// The shared queue's statements against a real server, several connections
/// at once where it matters: adds are idempotent and notify once a batch,
/// claims never take a row twice nor exceed per_host across workers, stale
/// tokens change nothing, expired leases give their claims back.
@Suite struct SharedQueueTests {
    let url: String

    init() throws {
        url = try PostgresCluster.shared().freshDatabase("queue")
        try SchemaMigrator().migrate(connect())
    }

    private func connect() throws -> PostgresConnection { try PostgresConnection(PostgresAddress(url)) }

    private func count(_ connection: PostgresConnection, _ sql: String, _ parameters: [PostgresValue] = []) throws -> Int64 {
        try connection.execute(sql, parameters).rows[0].int("n")
    }

    // MARK: add

    @Test func addsAreIdempotentAcrossWorkersAndNotifyOnceABatch() throws {
        let (first, second, listener) = (try connect(), try connect(), try connect())
        let queue = try SharedQueue.open(job: "adds", limits: JobLimits(perHost: 2), on: first)
        try listener.listen(QueueSchema.workChannel)
        let batch = queuedRequests(100, hosts: ["a.test", "b.test"])

        let added = try queue.add(batch, on: first)
        #expect(added.count == 100)
        #expect(Set(added.keys) == Set(batch.map(\.key)))
        let once = try listener.notifications(waitingUpTo: 5)
        #expect(once == [PostgresNotification(channel: QueueSchema.workChannel, payload: String(queue.job), senderPID: first.serverPID)])

        // Another worker adds the same keys and ten new ones: only the new are
        // its own, and it sends one notification for them.
        let overlapping = Array(batch[50...]) + queuedRequests(10, hosts: ["c.test"], prefix: "new")
        let secondAdded = try queue.add(overlapping, on: second)
        #expect(Set(secondAdded.keys) == Set(overlapping.suffix(10).map(\.key)))
        #expect(try listener.notifications(waitingUpTo: 5).count == 1)
        // Adding nothing new notifies nobody.
        #expect(try queue.add(batch, on: second).isEmpty)
        #expect(try listener.notifications(waitingUpTo: 0.3).isEmpty)

        #expect(try count(first, "SELECT count(*) AS n FROM dlpipe.downloads WHERE job_id = $1", [.int(queue.job)]) == 110)
        #expect(try count(first, "SELECT count(*) AS n FROM dlpipe.hosts WHERE job_id = $1", [.int(queue.job)]) == 3)
    }

    @Test func twoWorkersAddingOneBatchAtOnceMakeOneRowAKey() async throws {
        let url = url
        let queue = try SharedQueue.open(job: "race", limits: JobLimits(perHost: 2), on: connect())
        let batch = queuedRequests(300, hosts: ["a.test", "b.test", "c.test"])
        let addedByEach = try await within(seconds: 60, "four adds at once") {
            await withTaskGroup(of: Int.self) { group in
                for index in 0..<4 {
                    group.addTask {
                        let session = PostgresSession(try! PostgresAddress(url), label: "add-\(index)")
                        return (try? await session.perform { connection throws(PostgresError) in
                            try queue.add(batch, on: connection).count
                        }) ?? -1
                    }
                }
                var all: [Int] = []
                for await count in group { all.append(count) }
                return all
            }
        }
        #expect(!addedByEach.contains(-1))
        #expect(addedByEach.reduce(0, +) == 300)
        #expect(try count(connect(), "SELECT count(DISTINCT key) AS n FROM dlpipe.downloads WHERE job_id = $1", [.int(queue.job)]) == 300)
    }

    // MARK: claims

    @Test func concurrentClaimsNeverTakeARowTwiceNorExceedPerHost() throws {
        let setup = try connect()
        let perHost = 2
        let queue = try SharedQueue.open(job: "claims", limits: JobLimits(perHost: perHost), on: setup)
        let total = 240
        _ = try queue.add(queuedRequests(total, hosts: ["a.test", "b.test", "c.test"]), on: setup)

        let tracker = ClaimTracker(perHost: perHost)
        let workers = 6
        let group = DispatchGroup()
        let failures = Mutex<[String]>([])
        let done = Atomic<Int>(0)
        for index in 0..<workers {
            group.enter()
            Thread.detachNewThread { [url] in
                defer { group.leave() }
                do {
                    let connection = try PostgresConnection(PostgresAddress(url))
                    let worker = try queue.register(hostname: "test", pid: Int32(index), lease: 30, on: connection)
                    var generator = SplitMix64(seed: UInt64(index + 1))
                    while done.load(ordering: .acquiring) < total {
                        let claims = try queue.claim(worker: worker, limit: 4, on: connection)
                        if claims.isEmpty {
                            usleep(1_000)  // every slot taken by other workers: ask again soon
                            continue
                        }
                        tracker.started(claims)
                        usleep(UInt32(generator.next() % 3_000))  // a transfer
                        tracker.ended(claims)
                        let taken = try queue.report(claims.map { ClaimReport(id: $0.id, token: $0.token, outcome: .finished) }, on: connection)
                        if taken.count != claims.count { failures.withLock { $0.append("a report was refused") } }
                        done.add(claims.count, ordering: .releasing)
                    }
                } catch {
                    failures.withLock { $0.append("worker \(index): \(error)") }
                    done.store(total, ordering: .releasing)
                }
            }
        }
        // Meanwhile, snapshots of the database: each host's in_flight equals its
        // running rows (claims and reports change both in one statement), and
        // never exceeds per_host.
        var snapshots = 0
        while done.load(ordering: .acquiring) < total {
            let rows = try setup.execute(
                """
                SELECT h.host, h.in_flight,
                  (SELECT count(*) FROM dlpipe.downloads d
                   WHERE d.job_id = h.job_id AND d.slot_host = h.host AND d.status = 'running') AS running
                FROM dlpipe.hosts h WHERE h.job_id = $1
                """, [.int(queue.job)]).rows
            for row in rows {
                let (host, inFlight, running) = (try row.text("host"), try row.int("in_flight"), try row.int("running"))
                #expect(inFlight == running, "\(host): in_flight \(inFlight), running rows \(running)")
                #expect(running <= perHost)
            }
            snapshots += 1
        }
        #expect(group.wait(timeout: .now() + 60) == .success, "the workers did not finish within 60 s")
        #expect(failures.withLock { $0 } == [])
        #expect(snapshots > 0)
        let seen = tracker.result()
        #expect(seen.claimedTwice.isEmpty)
        #expect(seen.claimed.count == total)
        #expect(seen.overLimit.isEmpty)
        // The limit was reached, so it was tested, not just never approached.
        #expect(seen.highest.values.contains(perHost))
        #expect(try count(setup, "SELECT count(*) AS n FROM dlpipe.downloads WHERE job_id = $1 AND status = 'finished' AND attempts = 1", [.int(queue.job)]) == Int64(total))
        #expect(try count(setup, "SELECT coalesce(sum(in_flight), 0) AS n FROM dlpipe.hosts WHERE job_id = $1", [.int(queue.job)]) == 0)
    }

    @Test func claimsTakeHighPriorityFirstAndOneHostTurnAtATime() throws {
        let connection = try connect()
        let queue = try SharedQueue.open(job: "order", limits: JobLimits(perHost: 10), on: connection)
        let worker = try queue.register(hostname: "test", pid: 1, lease: 30, on: connection)
        _ = try queue.add(queuedRequests(6, hosts: ["a.test"], prefix: "low-a") + queuedRequests(6, hosts: ["b.test"], prefix: "low-b"), on: connection)
        _ = try queue.add(queuedRequests(1, hosts: ["b.test"], prefix: "high", priority: 5), on: connection)
        let claims = try queue.claim(worker: worker, limit: 5, on: connection)
        #expect(claims.first?.url == "http://b.test/high0")
        // The rest alternate between the hosts rather than drain one.
        let rest = claims.dropFirst().map(\.host)
        #expect(Set(rest) == ["a.test", "b.test"])
    }

    /// A run's adds go into the table in key order (so that workers adding
    /// at once never deadlock), and their ids follow the keys: claims took
    /// equal priorities in that order, not in the order the job added them.
    @Test func aRunsAddsAreClaimedInTheOrderAdded() throws {
        let connection = try connect()
        let queue = try SharedQueue.open(job: "add-order", limits: JobLimits(perHost: 100), on: connection)
        let worker = try queue.register(hostname: "test", pid: 1, lease: 30, on: connection)
        let run = try queue.joinRun(worker: worker, on: connection)
        let requests = queuedRequests(40, hosts: ["a.test"], prefix: "order")
        let ids = try queue.enqueue(requests, run: run, on: connection)
        #expect(ids.sorted() != ids, "the keys' order is not the adds' (else this shows nothing)")
        // In batches: a batch's rows come back in that order too (the worker
        // starts them in it), not by id.
        var claimed: [String] = []
        while case let batch = try queue.claim(worker: worker, limit: 7, on: connection), !batch.isEmpty {
            claimed += batch.map(\.url)
        }
        #expect(claimed == requests.map(\.url))
        // Claims held ahead too.
        let more = queuedRequests(40, hosts: ["a.test"], prefix: "ahead")
        _ = try queue.enqueue(more, run: run, on: connection)
        let ahead = try queue.claimAhead(worker: worker, hosts: ["a.test"], limit: 12, on: connection)
        #expect(ahead.map(\.url) == more.prefix(12).map(\.url))
    }

    @Test func aHostDelayGivesOneDownloadPerHostUntilItPasses() throws {
        let connection = try connect()
        let queue = try SharedQueue.open(job: "delay", limits: JobLimits(perHost: 4, hostDelay: 30), on: connection)
        let worker = try queue.register(hostname: "test", pid: 1, lease: 30, on: connection)
        _ = try queue.add(queuedRequests(8, hosts: ["a.test", "b.test"]), on: connection)
        let first = try queue.claim(worker: worker, limit: 8, on: connection)
        #expect(first.map(\.host).sorted() == ["a.test", "b.test"])
        // The slots are free, but the next request to each host is 30 s away.
        _ = try queue.report(first.map { ClaimReport(id: $0.id, token: $0.token, outcome: .finished) }, on: connection)
        #expect(try queue.claim(worker: worker, limit: 8, on: connection).isEmpty)
        // A worker learns when to claim next: when the delay has passed.
        let due = try #require(try queue.nextDue(on: connection))
        #expect(due > 25 && due <= 30, "\(due)")
    }

    @Test func aRetryAfterHoldsItsHostBackForEveryWorker() throws {
        let connection = try connect()
        let queue = try SharedQueue.open(job: "hold", limits: JobLimits(perHost: 4), on: connection)
        let first = try queue.register(hostname: "a", pid: 1, lease: 30, on: connection)
        let second = try queue.register(hostname: "b", pid: 2, lease: 30, on: connection)
        _ = try queue.add(queuedRequests(3, hosts: ["a.test"]) + queuedRequests(1, hosts: ["b.test"], prefix: "b"), on: connection)
        let held = try queue.claim(worker: first, limit: 4, on: connection)
        let onA = try #require(held.first { $0.host == "a.test" })
        // A 503 with Retry-After: 20 on a.test: the retry, and a.test for everyone.
        _ = try queue.report([ClaimReport(id: onA.id, token: onA.token, outcome: .retry(after: 20), error: "503", holdHost: 20)], on: connection)
        let others = try queue.claim(worker: second, limit: 4, on: connection)
        #expect(!others.contains { $0.host == "a.test" }, "a.test gave a download during its Retry-After: \(others.map(\.host))")
        let next = try connection.execute(
            "SELECT extract(epoch FROM next_at - now())::float8 AS s FROM dlpipe.hosts WHERE job_id = $1 AND host = 'a.test'",
            [.int(queue.job)]).rows[0]
        #expect(try next.double("s") > 15)
    }

    @Test func nextDueIsNowForReadyWorkAndNilForNone() throws {
        let connection = try connect()
        let queue = try SharedQueue.open(job: "due", limits: JobLimits(perHost: 1), on: connection)
        let worker = try queue.register(hostname: "test", pid: 1, lease: 30, on: connection)
        #expect(try queue.nextDue(on: connection) == nil, "nothing queued")
        _ = try queue.add(queuedRequests(2, hosts: ["a.test"]), on: connection)
        #expect(try queue.nextDue(on: connection) == 0)
        // The host's one slot is taken: nothing can be claimed until it comes free.
        let held = try #require(try queue.claim(worker: worker, limit: 2, on: connection).first)
        #expect(try queue.nextDue(on: connection) == nil)
        // A retry 20 s away: due then, and the other download now.
        _ = try queue.report([ClaimReport(id: held.id, token: held.token, outcome: .retry(after: 20))], on: connection)
        #expect(try queue.nextDue(on: connection) == 0)
        let other = try #require(try queue.claim(worker: worker, limit: 2, on: connection).first)
        #expect(other.id != held.id)
        _ = try queue.report([ClaimReport(id: other.id, token: other.token, outcome: .finished)], on: connection)
        let due = try #require(try queue.nextDue(on: connection))
        #expect(due > 15 && due <= 20, "\(due)")
    }

    @Test func aRetryWaitsForItsRunAtOnTheDatabaseClock() throws {
        let connection = try connect()
        let queue = try SharedQueue.open(job: "retry", limits: JobLimits(perHost: 2), on: connection)
        let worker = try queue.register(hostname: "test", pid: 1, lease: 30, on: connection)
        _ = try queue.add(queuedRequests(1, hosts: ["a.test"]), on: connection)
        let claim = try #require(try queue.claim(worker: worker, limit: 1, on: connection).first)
        let taken = try queue.report([ClaimReport(id: claim.id, token: claim.token, outcome: .retry(after: 1), error: "503")], on: connection)
        #expect(taken == [claim.id])
        #expect(try queue.claim(worker: worker, limit: 1, on: connection).isEmpty)
        let row = try connection.execute("SELECT run_at > now() AS later, last_error, status FROM dlpipe.downloads WHERE id = $1", [.int(claim.id)]).rows[0]
        #expect(try row.bool("later"))
        #expect(try row.optionalText("last_error") == "503")
        #expect(try row.text("status") == "ready")
        // Claimable again once run_at has come (polled: the database's clock decides).
        let again = try pollUntil(seconds: 10) { () throws -> ClaimedDownload? in
            try queue.claim(worker: worker, limit: 1, on: connection).first
        }
        #expect(again.id == claim.id)
        #expect(again.token != claim.token)
        #expect(again.attempts == 2)
    }

    // MARK: fencing and leases

    @Test func aStaleTokenChangesNothingAndAnExpiredLeaseGivesItsClaimsBack() throws {
        let (oldConnection, newConnection) = (try connect(), try connect())
        let queue = try SharedQueue.open(job: "lease", limits: JobLimits(perHost: 1), on: oldConnection)
        _ = try queue.add(queuedRequests(3, hosts: ["a.test"]) + queuedRequests(1, hosts: ["b.test"], prefix: "b"), on: oldConnection)
        let old = try queue.register(hostname: "frozen", pid: 1, lease: 2, on: oldConnection)
        let new = try queue.register(hostname: "alive", pid: 2, lease: 30, on: newConnection)
        let held = try queue.claim(worker: old, limit: 10, on: oldConnection)
        #expect(held.map(\.host).sorted() == ["a.test", "b.test"])  // per_host 1
        #expect(try queue.claim(worker: new, limit: 10, on: newConnection).isEmpty)
        // Within the lease nothing is taken back.
        #expect(try queue.takeBack(on: newConnection) == 0)

        // The old worker stops heartbeating; once its lease ran out on the
        // database clock, its claims go back and its slots are free.
        let back = try pollUntil(seconds: 10) { () throws -> Int? in
            let count = try queue.takeBack(on: newConnection)
            return count > 0 ? count : nil
        }
        #expect(back == 2)
        #expect(try queue.heartbeat(worker: old, on: oldConnection) == nil)
        #expect(try queue.claim(worker: old, limit: 10, on: oldConnection).isEmpty)
        let retaken = try queue.claim(worker: new, limit: 10, on: newConnection)
        #expect(Set(retaken.map(\.id)) == Set(held.map(\.id)))
        #expect(Set(retaken.map(\.token)).isDisjoint(with: held.map(\.token)))

        // The old worker's late reports change nothing: not the rows, not the slots.
        let late = try queue.report(held.map { ClaimReport(id: $0.id, token: $0.token, outcome: .failed, error: "late") }, on: oldConnection)
        #expect(late.isEmpty)
        #expect(try count(newConnection, "SELECT count(*) AS n FROM dlpipe.downloads WHERE job_id = $1 AND status = 'running' AND worker_id = $2", [.int(queue.job), .int(new)]) == 2)
        #expect(try count(newConnection, "SELECT sum(in_flight) AS n FROM dlpipe.hosts WHERE job_id = $1", [.int(queue.job)]) == 2)
        // The new holder's reports are taken.
        let current = try queue.report(retaken.map { ClaimReport(id: $0.id, token: $0.token, outcome: .finished) }, on: newConnection)
        #expect(current == Set(retaken.map(\.id)))
        #expect(try count(newConnection, "SELECT sum(in_flight) AS n FROM dlpipe.hosts WHERE job_id = $1", [.int(queue.job)]) == 0)
    }

    @Test func aWorkerFrozenInsideATransactionIsTakenBackOnceTheServerEndsItsSession() throws {
        // The frozen worker's connection is a worker's link: a transaction
        // left idle for its lease (2 s) ends its session on the server.
        let frozenLink = QueueWorker.link(try PostgresAddress(url), "frozen", idleInTransaction: 2)
        let aliveConnection = try connect()
        let queue = try SharedQueue.open(job: "frozen-in-transaction", limits: JobLimits(perHost: 4), on: aliveConnection)
        _ = try queue.add(queuedRequests(2, hosts: ["a.test"]), on: aliveConnection)
        let frozen = try frozenLink.run(patience: 0) { connection throws(PostgresError) in
            try queue.register(hostname: "frozen", pid: 1, lease: 2, on: connection)
        }
        let held = try frozenLink.run(patience: 0) { connection throws(PostgresError) in
            try queue.claim(worker: frozen, limit: 10, on: connection)
        }
        #expect(held.count == 2)
        // It froze between two statements of a report: its claims' rows and
        // their host's row stay locked.
        try frozenLink.run(patience: 0) { connection throws(PostgresError) in
            try connection.run("BEGIN")
            _ = try connection.execute(
                "SELECT 1 FROM dlpipe.downloads WHERE worker_id = $1 FOR UPDATE", [.int(frozen)])
            _ = try connection.execute(
                "SELECT 1 FROM dlpipe.hosts WHERE job_id = $1 FOR UPDATE", [.int(queue.job)])
        }
        // Another worker's take-back never waits long for those locks, and
        // takes the claims back once the server ended the frozen session.
        var longestCall = 0.0
        let back = try pollUntil(seconds: 15) { () throws -> Int? in
            let start = Date()
            let count = try queue.takeBack(waitingAtMost: 0.2, on: aliveConnection)
            longestCall = max(longestCall, Date().timeIntervalSince(start))
            return count > 0 ? count : nil
        }
        #expect(back == 2)
        #expect(longestCall < 2, "a take-back waited \(longestCall) s for a frozen worker's locks")
        // The frozen worker's next statement finds its session ended.
        let acknowledged = try frozenLink.run(patience: 5) { connection throws(PostgresError) in
            try queue.heartbeat(worker: frozen, on: connection)
        }
        #expect(frozenLink.reconnected)
        #expect(acknowledged == nil)
    }

    @Test func aWorkerNotGivenTheJobsLimitsKeepsThemAndOneGivenThemSetsThem() throws {
        let connection = try connect()
        // The first worker makes the job with what it was given.
        let first = try SharedQueue.open(job: "limits", limits: JobLimits(perHost: 5, hostDelay: 1.5), on: connection)
        #expect(first.limits.perHost == 5 && first.limits.hostDelay == 1.5)
        // A later worker without --per-host or --host-delay takes the job's.
        let later = try SharedQueue.open(
            job: "limits", limits: JobLimits(perHost: 2, hostDelay: 0, givesPerHost: false, givesHostDelay: false), on: connection)
        #expect(later.job == first.job)
        #expect(later.limits.perHost == 5 && later.limits.hostDelay == 1.5)
        // One given only --per-host changes that one.
        let given = try SharedQueue.open(
            job: "limits", limits: JobLimits(perHost: 3, hostDelay: 0, givesHostDelay: false), on: connection)
        #expect(given.limits.perHost == 3 && given.limits.hostDelay == 1.5)
        let row = try connection.execute(
            "SELECT per_host, extract(epoch FROM host_delay)::float8 AS d FROM dlpipe.jobs WHERE id = $1", [.int(first.job)]).rows[0]
        #expect(try row.int("per_host") == 3 && row.double("d") == 1.5)
        // A new job takes the worker's values, given or default.
        let fresh = try SharedQueue.open(
            job: "limits-new", limits: JobLimits(perHost: 2, hostDelay: 0, givesPerHost: false, givesHostDelay: false), on: connection)
        #expect(fresh.limits.perHost == 2 && fresh.limits.hostDelay == 0)
    }

    @Test func aRunThatNoLiveWorkerIsInIsEndedAndTheNextWorkerStartsAFreshOne() throws {
        let connection = try connect()
        let queue = try SharedQueue.open(job: "orphans", limits: JobLimits(perHost: 2), on: connection)
        let first = try queue.register(hostname: "a", pid: 1, lease: 30, on: connection)
        let run = try queue.joinRun(worker: first, on: connection)
        let second = try queue.register(hostname: "b", pid: 2, lease: 30, on: connection)
        #expect(try queue.joinRun(worker: second, on: connection) == run, "a live worker's run is joined")
        // One leaves while the other is in the run: the run goes on.
        try queue.takeBack(worker: first, on: connection)
        #expect(try !queue.endOrphanedRun(except: first, on: connection))
        // The last one leaves (Ctrl-C): the run ends, interrupted.
        try queue.takeBack(worker: second, on: connection)
        #expect(try queue.endOrphanedRun(except: second, on: connection))
        let ended = try connection.execute("SELECT ended_at IS NOT NULL AS ended, exit_code FROM dlpipe.runs WHERE id = $1", [.int(run)]).rows[0]
        #expect(try ended.bool("ended") && ended.optionalInt("exit_code") == 130)
        // A worker whose lease ran out (killed) leaves its run open: the next
        // worker ends it and starts a fresh run.
        let killed = try queue.register(hostname: "c", pid: 3, lease: 2, on: connection)
        let killedRun = try queue.joinRun(worker: killed, on: connection)
        #expect(killedRun != run)
        _ = try pollUntil(seconds: 10) { () throws -> Bool? in
            try connection.execute("SELECT 1 FROM dlpipe.workers WHERE id = $1 AND lease_until < now()", [.int(killed)]).rows.isEmpty ? nil : true
        }
        let next = try queue.register(hostname: "d", pid: 4, lease: 30, on: connection)
        let nextRun = try queue.joinRun(worker: next, on: connection)
        #expect(nextRun != killedRun)
        #expect(try count(connection, "SELECT count(*) AS n FROM dlpipe.runs WHERE job_id = $1 AND ended_at IS NULL", [.int(queue.job)]) == 1)
    }

    @Test func heartbeatsKeepALeaseAlive() throws {
        let connection = try connect()
        let queue = try SharedQueue.open(job: "heartbeat", limits: JobLimits(perHost: 2), on: connection)
        let worker = try queue.register(hostname: "test", pid: 1, lease: 2, on: connection)
        _ = try queue.add(queuedRequests(1, hosts: ["a.test"]), on: connection)
        #expect(try queue.claim(worker: worker, limit: 1, on: connection).count == 1)
        // Heartbeats every third of the lease, for twice the lease: never taken back.
        let until = Date().addingTimeInterval(4)
        while Date() < until {
            #expect(try queue.heartbeat(worker: worker, on: connection) == 2)
            #expect(try queue.takeBack(on: connection) == 0)
            usleep(600_000)  // the heartbeat period under test, not a wait for a condition
        }
        #expect(try queue.takeBack(worker: worker, on: connection) == 1)  // it leaves: its claim goes back
        #expect(try queue.heartbeat(worker: worker, on: connection) == nil)
    }
}

/// What the concurrent workers claimed, seen from outside the database.
private final class ClaimTracker: Sendable {
    struct Seen {
        var claimed = Set<Int64>()
        var claimedTwice: [Int64] = []
        var inFlight: [String: Int] = [:]
        var highest: [String: Int] = [:]
        var overLimit: [String] = []
    }

    let perHost: Int
    private let seen = Mutex(Seen())

    init(perHost: Int) { self.perHost = perHost }

    /// Counted after the claim committed and before its report: the count
    /// here never exceeds what the database counts.
    func started(_ claims: [ClaimedDownload]) {
        seen.withLock { seen in
            for claim in claims {
                if !seen.claimed.insert(claim.id).inserted { seen.claimedTwice.append(claim.id) }
                seen.inFlight[claim.host, default: 0] += 1
                let now = seen.inFlight[claim.host]!
                seen.highest[claim.host] = max(seen.highest[claim.host] ?? 0, now)
                if now > perHost { seen.overLimit.append("\(claim.host): \(now)") }
            }
        }
    }

    func ended(_ claims: [ClaimedDownload]) {
        seen.withLock { seen in
            for claim in claims { seen.inFlight[claim.host, default: 0] -= 1 }
        }
    }

    func result() -> Seen { seen.withLock { $0 } }
}
