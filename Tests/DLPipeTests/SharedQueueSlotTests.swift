import Foundation
import Synchronization
import Testing
import TestSupport

@testable import DLPipe
@testable import DLPipeQueue

/// A host slot counts transfers (schema version 5): a claim gives its slot
/// back when its transfer ends and stays running until its report; the
/// report, a take-back or a second give-back never give one slot back twice,
/// and `in_flight` stays the number of running rows that hold a slot.
@Suite struct SharedQueueSlotTests {
    let url: String

    init() throws {
        url = try PostgresCluster.shared().freshDatabase("slots")
    }

    private func connect(migrating: Bool = true) throws -> PostgresConnection {
        let connection = try PostgresConnection(PostgresAddress(url))
        if migrating { try SchemaMigrator().migrate(connection) }
        return connection
    }

    private func number(_ connection: PostgresConnection, _ sql: String, _ parameters: [PostgresValue]) throws -> Int64 {
        try connection.execute(sql, parameters).rows[0].int("n")
    }

    private func inFlight(_ connection: PostgresConnection, _ queue: SharedQueue, _ host: String = "a.test") throws -> Int64 {
        try number(connection, "SELECT in_flight AS n FROM dlpipe.hosts WHERE job_id = $1 AND host = $2", [.int(queue.job), .text(host)])
    }

    @Test func aSlotGoesBackWhenItsTransferEndsOnceAndTheReportGivesNothingMore() throws {
        let connection = try connect()
        let queue = try SharedQueue.open(job: "give-back", limits: JobLimits(perHost: 2), on: connection)
        _ = try queue.add(queuedRequests(5, hosts: ["a.test"]), on: connection)
        let worker = try queue.register(hostname: "w", pid: 1, lease: 30, on: connection)
        let first = try queue.claim(worker: worker, limit: 10, on: connection)
        #expect(first.count == 2)
        #expect(try queue.claim(worker: worker, limit: 10, on: connection).isEmpty)

        // The first transfer ended: its slot goes back, its row stays running under its token.
        let ended = first[0]
        #expect(try queue.giveBack([(ended.id, ended.token)], on: connection) == 1)
        #expect(try inFlight(connection, queue) == 1)
        let row = try connection.execute(
            "SELECT status, claim_token, slot_host FROM dlpipe.downloads WHERE id = $1", [.int(ended.id)]).rows[0]
        #expect(try row.text("status") == "running" && row.int("claim_token") == ended.token && row.optionalText("slot_host") == nil)
        // Given back again, or under a token that is not the row's: nothing.
        #expect(try queue.giveBack([(ended.id, ended.token), (first[1].id, first[1].token + 1000)], on: connection) == 0)
        #expect(try inFlight(connection, queue) == 1)

        // The freed slot takes a third claim while the first waits for its report.
        let third = try queue.claim(worker: worker, limit: 10, on: connection)
        #expect(third.count == 1)
        #expect(try inFlight(connection, queue) == 2)
        #expect(try number(connection, "SELECT count(*) AS n FROM dlpipe.downloads WHERE worker_id = $1 AND status = 'running'", [.int(worker)]) == 3)

        // Its report is taken and gives nothing back; the others' give theirs.
        #expect(try queue.report([ClaimReport(id: ended.id, token: ended.token, outcome: .finished)], on: connection) == [ended.id])
        #expect(try inFlight(connection, queue) == 2)
        let rest = [first[1]] + third
        #expect(try queue.report(rest.map { ClaimReport(id: $0.id, token: $0.token, outcome: .finished) }, on: connection) == Set(rest.map(\.id)))
        #expect(try inFlight(connection, queue) == 0)
        // After its end a give-back changes nothing.
        #expect(try queue.giveBack([(ended.id, ended.token)], on: connection) == 0)
        #expect(try inFlight(connection, queue) == 0)
    }

    @Test func aRetryWhoseSlotWentBackStillHoldsItsHostForEveryWorker() throws {
        let connection = try connect()
        let queue = try SharedQueue.open(job: "hold-after-give-back", limits: JobLimits(perHost: 2), on: connection)
        _ = try queue.add(queuedRequests(3, hosts: ["a.test"]), on: connection)
        let worker = try queue.register(hostname: "w", pid: 1, lease: 30, on: connection)
        let claims = try queue.claim(worker: worker, limit: 1, on: connection)
        #expect(claims.count == 1)
        let claim = claims[0]
        #expect(try queue.giveBack([(claim.id, claim.token)], on: connection) == 1)
        // A 503 with Retry-After 20: the retry's report moves the host's next
        // claim 20 s on, and gives no second slot back.
        let taken = try queue.report([ClaimReport(id: claim.id, token: claim.token, outcome: .retry(after: 20), error: "503", holdHost: 20)], on: connection)
        #expect(taken == [claim.id])
        #expect(try inFlight(connection, queue) == 0)
        #expect(try number(connection, "SELECT (next_at > now() + interval '15 seconds')::int AS n FROM dlpipe.hosts WHERE job_id = $1", [.int(queue.job)]) == 1)
        #expect(try queue.claim(worker: worker, limit: 10, on: connection).isEmpty)
    }

    @Test func aTakeBackGivesBackOnlyTheSlotsADeadWorkerStillHeld() throws {
        let (deadConnection, aliveConnection) = (try connect(), try connect())
        let queue = try SharedQueue.open(job: "take-back", limits: JobLimits(perHost: 3), on: deadConnection)
        _ = try queue.add(queuedRequests(6, hosts: ["a.test"]), on: deadConnection)
        let dead = try queue.register(hostname: "dead", pid: 1, lease: 2, on: deadConnection)
        let alive = try queue.register(hostname: "alive", pid: 2, lease: 30, on: aliveConnection)
        let held = try queue.claim(worker: dead, limit: 10, on: deadConnection)
        #expect(held.count == 3)
        // Two transfers ended and gave their slots back; their files still wait.
        #expect(try queue.giveBack(held.prefix(2).map { ($0.id, $0.token) }, on: deadConnection) == 2)
        let more = try queue.claim(worker: dead, limit: 10, on: deadConnection)
        #expect(more.count == 2)
        #expect(try inFlight(aliveConnection, queue) == 3)

        // Its lease runs out: its five claims go back, and only the three slots it held.
        let back = try pollUntil(seconds: 10) { () throws -> Int? in
            let count = try queue.takeBack(on: aliveConnection)
            return count > 0 ? count : nil
        }
        #expect(back == 5)
        #expect(try inFlight(aliveConnection, queue) == 0)
        // Its late give-backs change nothing.
        #expect(try queue.giveBack((held + more).map { ($0.id, $0.token) }, on: deadConnection) == 0)
        #expect(try inFlight(aliveConnection, queue) == 0)
        let retaken = try queue.claim(worker: alive, limit: 10, on: aliveConnection)
        #expect(retaken.count == 3)
        #expect(try inFlight(aliveConnection, queue) == 3)
    }

    @Test func aClaimWhoseAnswerWasLostGivesBackOnlyTheSlotItHeld() throws {
        let connection = try connect()
        let queue = try SharedQueue.open(job: "unknown", limits: JobLimits(perHost: 4), on: connection)
        _ = try queue.add(queuedRequests(4, hosts: ["a.test"]), on: connection)
        let worker = try queue.register(hostname: "w", pid: 1, lease: 30, on: connection)
        let claims = try queue.claim(worker: worker, limit: 4, on: connection)
        #expect(claims.count == 4)
        #expect(try queue.giveBack([(claims[0].id, claims[0].token)], on: connection) == 1)
        // The worker knows only the last claim: the other three go back, two of them with a slot.
        #expect(try queue.releaseUnknownClaims(worker: worker, known: [claims[3].token], on: connection) == 3)
        #expect(try inFlight(connection, queue) == 1)
    }

    @Test func concurrentWorkersGivingSlotsBackNeverExceedPerHost() throws {
        let setup = try connect()
        let perHost = 3
        let queue = try SharedQueue.open(job: "concurrent", limits: JobLimits(perHost: perHost), on: setup)
        let total = 240
        _ = try queue.add(queuedRequests(total, hosts: ["a.test"]), on: setup)
        let done = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        let mostHeld = Atomic<Int>(0)
        let group = DispatchGroup()
        for index in 0..<4 {
            group.enter()
            Thread.detachNewThread { [url] in
                defer { group.leave() }
                do {
                    let connection = try PostgresConnection(PostgresAddress(url))
                    let worker = try queue.register(hostname: "test", pid: Int32(index), lease: 30, on: connection)
                    var generator = SplitMix64(seed: UInt64(index + 1))
                    // Claims whose transfer ended and whose report is still to come.
                    var waiting: [ClaimedDownload] = []
                    while done.load(ordering: .acquiring) < total {
                        let claims = try queue.claim(worker: worker, limit: 2, on: connection)
                        usleep(UInt32(generator.next() % 2_000))  // their transfers
                        // In one transaction, as the claim loop: the slots go back
                        // and a claim may take them at once.
                        let freed = try connection.transaction { () throws(PostgresError) in
                            try queue.giveBack(claims.map { ($0.id, $0.token) }, on: connection)
                        }
                        if freed > claims.count { failures.withLock { $0.append("\(freed) slots freed for \(claims.count) claims") } }
                        waiting += claims
                        _ = mostHeld.max(waiting.count, ordering: .relaxed)
                        // Reports come later, a few at a time.
                        if waiting.count >= 6 || (claims.isEmpty && !waiting.isEmpty) {
                            let taken = try queue.report(waiting.map { ClaimReport(id: $0.id, token: $0.token, outcome: .finished) }, on: connection)
                            if taken.count != waiting.count { failures.withLock { $0.append("a report was refused") } }
                            done.add(waiting.count, ordering: .releasing)
                            waiting = []
                        } else if claims.isEmpty {
                            usleep(1_000)
                        }
                    }
                } catch {
                    failures.withLock { $0.append("worker \(index): \(error)") }
                    done.store(total, ordering: .releasing)
                }
            }
        }
        // Snapshots: in_flight is exactly the running rows that hold a slot,
        // and never more than per_host; running rows may be more.
        var snapshots = 0
        var mostRunning: Int64 = 0
        while done.load(ordering: .acquiring) < total {
            let row = try setup.execute(
                """
                SELECT h.in_flight,
                  (SELECT count(*) FROM dlpipe.downloads d WHERE d.job_id = h.job_id AND d.status = 'running' AND d.slot_host = h.host) AS slots,
                  (SELECT count(*) FROM dlpipe.downloads d WHERE d.job_id = h.job_id AND d.status = 'running') AS running
                FROM dlpipe.hosts h WHERE h.job_id = $1
                """, [.int(queue.job)]).rows[0]
            let (inFlight, slots, running) = (try row.int("in_flight"), try row.int("slots"), try row.int("running"))
            #expect(inFlight == slots, "in_flight \(inFlight), running rows holding a slot \(slots)")
            #expect(inFlight <= Int64(perHost))
            mostRunning = max(mostRunning, running)
            snapshots += 1
        }
        #expect(group.wait(timeout: .now() + 60) == .success, "the workers did not finish within 60 s")
        #expect(failures.withLock { $0 } == [])
        #expect(snapshots > 0)
        // Claims outnumbered the slots: the bound was on transfers, not claims.
        #expect(mostHeld.load(ordering: .relaxed) > perHost)
        #expect(try number(setup, "SELECT count(*) AS n FROM dlpipe.downloads WHERE job_id = $1 AND status = 'finished' AND attempts = 1", [.int(queue.job)]) == Int64(total))
        #expect(try inFlight(setup, queue) == 0)
        print("slots: \(snapshots) snapshots, at most \(mostRunning) running rows at once on \(perHost) slots")
    }

    @Test func aVersion4DatabaseIsMigratedSoARunningRowMayHaveGivenItsSlotBack() throws {
        let connection = try connect(migrating: false)
        try SchemaMigrator(Array(QueueSchema.migrations.prefix(4))).migrate(connection)
        let queue = try SharedQueue.open(job: "old", limits: JobLimits(perHost: 2), on: connection)
        _ = try queue.add(queuedRequests(3, hosts: ["a.test"]), on: connection)
        // A worker of a build of version 4's time: its row has the columns of then.
        let worker = try connection.execute(
            """
            INSERT INTO dlpipe.workers (job_id, hostname, pid, lease, lease_until)
            VALUES ($1, 'w', 1, interval '30 seconds', now() + interval '30 seconds') RETURNING id
            """, [.int(queue.job)]
        ).rows[0].int("id")
        // Its claim, as version 4's statement made one (this build's claim
        // reads columns of later versions): a slot per claim, up to per_host.
        let claims = try connection.execute(
            """
            WITH picked AS (
              SELECT id, host FROM dlpipe.downloads WHERE job_id = $1 AND status = 'ready' ORDER BY id LIMIT 2 FOR UPDATE
            ),
            claimed AS (
              UPDATE dlpipe.downloads d SET status = 'running', worker_id = $2, claim_token = nextval('dlpipe.claim_tokens'),
                slot_host = p.host, claimed_at = now(), attempts = d.attempts + 1
              FROM picked p WHERE d.id = p.id RETURNING d.id, d.claim_token
            ),
            slots AS (
              UPDATE dlpipe.hosts h SET in_flight = h.in_flight + (SELECT count(*) FROM claimed)::int
              WHERE h.job_id = $1 AND h.host = 'a.test'
            )
            SELECT id, claim_token FROM claimed ORDER BY id
            """, [.int(queue.job), .int(worker)]
        ).rows.map { row in (id: try row.int("id"), token: try row.int("claim_token")) }
        #expect(claims.count == 2)
        // Version 4 refuses a running row without a slot. (Asked by hand:
        // `giveBack` goes through the report's statement, which names
        // version 6's table.)
        let refused = #expect(throws: PostgresError.self) {
            try connection.execute("UPDATE dlpipe.downloads SET slot_host = NULL WHERE id = $1", [.int(claims[0].id)])
        }
        #expect(refused?.sqlState == "23514")

        // A worker of this build migrates it; the claims running meanwhile keep their slots.
        let migrated = try SchemaMigrator().migrate(connection)
        #expect(migrated.from == 4 && migrated.applied == Array(5...QueueSchema.latest))
        #expect(try inFlight(connection, queue) == 2)
        #expect(try queue.giveBack([(claims[0].id, claims[0].token)], on: connection) == 1)
        #expect(try inFlight(connection, queue) == 1)
        #expect(try queue.report(claims.map { ClaimReport(id: $0.id, token: $0.token, outcome: .finished) }, on: connection).count == 2)
        #expect(try inFlight(connection, queue) == 0)
        // Running still goes with a claim token, both ways.
        let running = #expect(throws: PostgresError.self) {
            try connection.execute("UPDATE dlpipe.downloads SET status = 'running' WHERE job_id = $1 AND status = 'ready'", [.int(queue.job)])
        }
        #expect(running?.sqlState == "23514")
        let tokenless = try queue.claim(worker: worker, limit: 1, on: connection)
        #expect(tokenless.count == 1)
        let orphan = #expect(throws: PostgresError.self) {
            try connection.execute("UPDATE dlpipe.downloads SET claim_token = NULL WHERE id = $1", [.int(tokenless[0].id)])
        }
        #expect(orphan?.sqlState == "23514")
    }
}
