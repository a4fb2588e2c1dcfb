import Foundation
import Synchronization
import Testing
import TestSupport

@testable import DLPipe
@testable import DLPipeQueue

/// What several workers of one job share in the run, against a real server:
/// no row that every report or look writes (the run's counts are kept per
/// worker), the job's top-level adds sent once per run, and `max_downloads`
/// counted for the whole run.
@Suite struct SharedQueueWorkersTests {
    let url: String

    init() throws {
        url = try PostgresCluster.shared().freshDatabase("workers")
        try SchemaMigrator().migrate(connect())
    }

    private func connect() throws -> PostgresConnection { try PostgresConnection(PostgresAddress(url)) }

    /// A connection that gives up on any row lock after `milliseconds`: a
    /// statement that needs a row another transaction holds fails (55P03).
    private func impatient(_ milliseconds: Int = 300) throws -> PostgresConnection {
        let connection = try connect()
        try connection.run("SET lock_timeout = \(milliseconds)")
        return connection
    }

    /// Holds the run's row locked, as a transaction of another worker that
    /// writes it (an UPDATE's lock), until `body` returns.
    private func holdingRunRow<T>(_ run: Int64, _ body: () throws -> T) throws -> T {
        let holder = try connect()
        try holder.run("BEGIN")
        defer { try? holder.run("ROLLBACK") }
        try holder.execute("SELECT 1 FROM dlpipe.runs WHERE id = $1 FOR NO KEY UPDATE", [.int(run)])
        return try body()
    }

    @Test func reportsOfTwoWorkersCountInTheirOwnRowsAndDoneSumsThem() throws {
        let setup = try connect()
        let queue = try SharedQueue.open(job: "counts", limits: JobLimits(perHost: 8), on: setup)
        let (first, second) = (try queue.register(hostname: "a", pid: 1, lease: 30, on: setup),
                               try queue.register(hostname: "b", pid: 2, lease: 30, on: setup))
        let run = try queue.joinRun(worker: first, on: setup)
        #expect(try queue.joinRun(worker: second, on: setup) == run)
        _ = try queue.enqueue(queuedRequests(6, hosts: ["a.test"]), run: run, on: setup)
        let mine = try queue.claim(worker: first, limit: 3, on: setup)
        let theirs = try queue.claim(worker: second, limit: 3, on: setup)
        #expect(mine.count == 3 && theirs.count == 3)

        // While another transaction holds the run's row, both workers' reports
        // go through: a report writes no row that another worker writes.
        try holdingRunRow(run) {
            let connection = try impatient()
            _ = try queue.report(
                [ClaimReport(id: mine[0].id, token: mine[0].token, outcome: .finished, bytes: 10),
                 ClaimReport(id: mine[1].id, token: mine[1].token, outcome: .finished, unchanged: true),
                 ClaimReport(id: mine[2].id, token: mine[2].token, outcome: .failed, error: "404")],
                run: run, worker: first, on: connection)
            _ = try queue.report(
                [ClaimReport(id: theirs[0].id, token: theirs[0].token, outcome: .finished, bytes: 5),
                 ClaimReport(id: theirs[1].id, token: theirs[1].token, outcome: .skipped),
                 ClaimReport(id: theirs[2].id, token: theirs[2].token, outcome: .retry(after: 0))],
                run: run, worker: second, on: connection)
        }
        let rows = try setup.execute(
            "SELECT worker_id, finished, unchanged, failed, skipped, bytes FROM dlpipe.run_workers WHERE run_id = $1 ORDER BY worker_id",
            [.int(run)]).rows
        #expect(rows.count == 2)
        #expect(try rows.map { try [$0.int("worker_id"), $0.int("finished"), $0.int("unchanged"), $0.int("failed"), $0.int("skipped"), $0.int("bytes")] }
            == [[first, 1, 1, 1, 0, 10], [second, 1, 0, 0, 1, 5]])

        // The retried one ends too; then done gets the sum of both workers.
        let again = try queue.claim(worker: first, limit: 1, on: setup)
        _ = try queue.report([ClaimReport(id: again[0].id, token: again[0].token, outcome: .handled, error: "x")], run: run, worker: first, on: setup)
        #expect(try queue.look(run: run, settle: 0, on: setup).busy == false)
        let summary = try #require(try queue.takeDone(run: run, worker: second, settle: 0, on: setup))
        #expect(summary.finished == 2 && summary.unchanged == 1 && summary.failed == 1 && summary.handled == 1)
        #expect(summary.skipped == 1 && summary.bytes == 15)
        // dlpipe status shows the same sums.
        guard case .found(let report) = try QueueReport.read(job: "counts", on: setup) else {
            Issue.record("no report")
            return
        }
        #expect(report.runs.first?.finished == 2 && report.runs.first?.unchanged == 1 && report.runs.first?.failed == 1)
        #expect(report.runs.first?.handled == 1)
    }

    @Test func aLookWritesTheRunsRowOnlyWhenItsIdleTimeChanges() throws {
        let setup = try connect()
        let queue = try SharedQueue.open(job: "looks", limits: JobLimits(perHost: 2), on: setup)
        let worker = try queue.register(hostname: "a", pid: 1, lease: 30, on: setup)
        let run = try queue.joinRun(worker: worker, on: setup)
        func idleSince() throws -> String? {
            try setup.execute("SELECT idle_since::text AS t FROM dlpipe.runs WHERE id = $1", [.int(run)]).rows[0].optionalText("t")
        }
        // The first look of an idle run marks it idle.
        #expect(try queue.look(run: run, settle: 60, on: setup).busy == false)
        let marked = try #require(try idleSince())
        // Later looks change nothing, so they need no lock on the run's row.
        try holdingRunRow(run) {
            let connection = try impatient()
            for _ in 0..<3 { #expect(try queue.look(run: run, settle: 60, on: connection).settled == false) }
        }
        #expect(try idleSince() == marked)
        // Work makes it busy (one write), and again only the change writes.
        let ids = try queue.enqueue(queuedRequests(1, hosts: ["a.test"]), run: run, on: setup)
        #expect(ids.count == 1)
        #expect(try idleSince() == nil)
        let busy = try holdingRunRow(run) { () throws -> Bool in
            try queue.look(run: run, settle: 0, on: impatient()).busy
        }
        #expect(busy)
    }

    @Test func aTopLevelQueuedWholeIsFoundByTheSameDigestOnlyInItsRun() throws {
        let setup = try connect()
        let queue = try SharedQueue.open(job: "top", limits: JobLimits(perHost: 2), on: setup)
        let (first, second) = (try queue.register(hostname: "a", pid: 1, lease: 30, on: setup),
                               try queue.register(hostname: "b", pid: 2, lease: 30, on: setup))
        let run = try queue.joinRun(worker: first, on: setup)
        let top = queuedRequests(50, hosts: ["a.test"])
        let digest = SharedQueue.topLevelDigest(top)
        // Nothing recorded: the worker must send them.
        #expect(try queue.queuedTopLevel(top, digest: digest, run: run, on: setup) == nil)
        // Queued, but not recorded (a worker that died before it finished): still sent.
        let ids = try queue.enqueue(top, run: run, on: setup)
        #expect(try queue.queuedTopLevel(top, digest: digest, run: run, on: setup) == nil)
        try queue.recordTopLevel(digest: digest, run: run, worker: first, on: setup)
        // The same adds find their ids, in order, without a write.
        #expect(try queue.joinRun(worker: second, on: setup) == run)
        #expect(try queue.queuedTopLevel(top, digest: digest, run: run, on: setup) == ids)
        // Other adds (one field differs) have another digest: sent.
        var other = top
        other[7].priority = 5
        let otherDigest = SharedQueue.topLevelDigest(other)
        #expect(otherDigest != digest && otherDigest.count == 32)
        #expect(try queue.queuedTopLevel(other, digest: otherDigest, run: run, on: setup) == nil)
        #expect(SharedQueue.topLevelDigest(Array(top.reversed())) != digest, "the order is part of the digest")
        // The next run has to queue them again: the record is the run's.
        try setup.execute("UPDATE dlpipe.downloads SET status = 'finished' WHERE job_id = $1", [.int(queue.job)])
        try queue.endRun(run, exitCode: 0, on: setup)
        let next = try queue.joinRun(worker: second, on: setup)
        #expect(next != run)
        #expect(try queue.queuedTopLevel(top, digest: digest, run: next, on: setup) == nil)
    }

    @Test func workersStartingTogetherSendTheTopLevelOnceAndADeadSendersTurnPasses() throws {
        let setup = try connect()
        let queue = try SharedQueue.open(job: "together", limits: JobLimits(perHost: 2), on: setup)
        let worker = try queue.register(hostname: "a", pid: 1, lease: 30, on: setup)
        let run = try queue.joinRun(worker: worker, on: setup)
        let top = queuedRequests(300, hosts: ["a.test"])
        let digest = SharedQueue.topLevelDigest(top)

        // A sender that dies holding the turn (its session ends): the next
        // worker's turn comes, finds no record, and sends them all.
        let dying = try connect()
        let died = DispatchSemaphore(value: 0)
        let waiterSent = Mutex<Bool?>(nil)
        try queue.oneTopLevelAtATime(digest: digest, run: run, on: dying) { () throws(PostgresError) in
            _ = try queue.enqueue(Array(top.prefix(100)), run: run, on: dying)
            Thread.detachNewThread { [url] in
                let sent = try? PostgresConnection(PostgresAddress(url)).withTurn(queue, top, digest, run, worker)
                waiterSent.withLock { $0 = sent }
                died.signal()
            }
            // The waiter cannot go on while this one holds the turn.
            #expect(died.wait(timeout: .now() + 0.5) == .timedOut)
            // The sender's session ends (a killed worker): the waiter's turn.
            try setup.execute("SELECT pg_terminate_backend($1)", [.int(Int64(dying.serverPID))])
            #expect(died.wait(timeout: .now() + 30) == .success)
        }
        #expect(waiterSent.withLock { $0 } == true, "the waiter found a record of a top level sent in part")
        #expect(try setup.execute("SELECT count(*) AS n FROM dlpipe.downloads WHERE run_id = $1", [.int(run)]).rows[0].int("n") == 300)

        // Four workers at once on a fresh run: one sends, three read.
        try setup.execute("UPDATE dlpipe.downloads SET status = 'finished' WHERE job_id = $1", [.int(queue.job)])
        try queue.endRun(run, exitCode: 0, on: setup)
        let next = try queue.joinRun(worker: worker, on: setup)
        let sent = Mutex<[Bool]>([])
        let group = DispatchGroup()
        for _ in 0..<4 {
            group.enter()
            Thread.detachNewThread { [url] in
                defer { group.leave() }
                if let one = try? PostgresConnection(PostgresAddress(url)).withTurn(queue, top, digest, next, worker) {
                    sent.withLock { $0.append(one) }
                }
            }
        }
        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(sent.withLock { $0.map { $0 ? 1 : 0 }.sorted() } == [0, 0, 0, 1])
    }

    @Test func aTurnHeldPastItsPatienceIsNotWaitedFor() throws {
        // As a lock a transaction-mode pooler kept on a session nobody owns:
        // the next worker sends after its patience instead of waiting forever.
        let (holder, waiter) = (try connect(), try connect())
        let queue = try SharedQueue.open(job: "stuck-turn", limits: JobLimits(perHost: 2), on: holder)
        let digest = SharedQueue.topLevelDigest(queuedRequests(3, hosts: ["a.test"]))
        let waited = try queue.oneTopLevelAtATime(digest: digest, run: 1, on: holder) { () throws(PostgresError) -> Double in
            let start = Date()
            return try queue.oneTopLevelAtATime(digest: digest, run: 1, patience: 0.4, on: waiter) { () throws(PostgresError) in
                Date().timeIntervalSince(start)
            }
        }
        #expect(waited >= 0.4 && waited < 10, "waited \(waited) s")
        // A free turn is taken at once.
        let start = Date()
        try queue.oneTopLevelAtATime(digest: digest, run: 1, patience: 5, on: waiter) { () throws(PostgresError) in }
        #expect(Date().timeIntervalSince(start) < 2)
    }

    @Test func maxDownloadsCountsTheRunsAddsOfEveryWorker() async throws {
        let setup = try connect()
        let queue = try SharedQueue.open(job: "limit", limits: JobLimits(perHost: 2, maxDownloads: 10), on: setup)
        #expect(queue.limits.maxDownloads == 10)
        let worker = try queue.register(hostname: "a", pid: 1, lease: 30, on: setup)
        let run = try queue.joinRun(worker: worker, on: setup)
        // One worker queues 6, another 6 others: 4 of those fit.
        let first = try queue.enqueue(queuedRequests(6, hosts: ["a.test"], prefix: "a"), run: run, on: setup)
        #expect(!first.contains(0))
        let second = try queue.enqueue(queuedRequests(6, hosts: ["a.test"], prefix: "b"), run: run, on: connect())
        #expect(second.prefix(4).allSatisfy { $0 > 0 } && second.suffix(2) == [0, 0], "\(second)")
        // Adding what the run has is no new download: its ids, nothing refused.
        #expect(try queue.enqueue(queuedRequests(6, hosts: ["a.test"], prefix: "a"), run: run, on: connect()) == first)
        #expect(try queue.enqueue(queuedRequests(1, hosts: ["a.test"], prefix: "c"), run: run, on: connect()) == [0])

        // Several workers adding at once never queue more than the limit.
        let url = url
        let racing = try SharedQueue.open(job: "limit-race", limits: JobLimits(perHost: 2, maxDownloads: 25), on: setup)
        let raceWorker = try racing.register(hostname: "a", pid: 1, lease: 30, on: setup)
        let raceRun = try racing.joinRun(worker: raceWorker, on: setup)
        let accepted = try await within(seconds: 60, "four workers adding at once") {
            await withTaskGroup(of: Int.self) { group in
                for index in 0..<4 {
                    group.addTask {
                        let session = PostgresSession(try! PostgresAddress(url), label: "add-\(index)")
                        let batch = queuedRequests(20, hosts: ["a.test"], prefix: "w\(index)-")
                        return (try? await session.perform { connection throws(PostgresError) in
                            try racing.enqueue(batch, run: raceRun, on: connection).filter { $0 > 0 }.count
                        }) ?? -100
                    }
                }
                var total = 0
                for await count in group { total += count }
                return total
            }
        }
        #expect(accepted == 25)
        let counted = try setup.execute(
            "SELECT queued, (SELECT count(*) FROM dlpipe.downloads WHERE run_id = $1) AS rows FROM dlpipe.runs WHERE id = $1",
            [.int(raceRun)]).rows[0]
        #expect(try counted.int("queued") == 25 && counted.int("rows") == 25)
    }
}

extension PostgresConnection {
    /// What a worker does with its top level: in its turn, reads the ids
    /// when they were recorded, else sends them and records them. Whether it sent.
    fileprivate func withTurn(_ queue: SharedQueue, _ top: [QueuedRequest], _ digest: [UInt8], _ run: Int64, _ worker: Int64) throws -> Bool {
        try queue.oneTopLevelAtATime(digest: digest, run: run, on: self) { () throws(PostgresError) -> Bool in
            if try queue.queuedTopLevel(top, digest: digest, run: run, on: self) != nil { return false }
            _ = try queue.enqueue(top, run: run, on: self)
            try queue.recordTopLevel(digest: digest, run: run, worker: worker, on: self)
            return true
        }
    }
}
