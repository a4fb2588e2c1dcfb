import Foundation
import Testing
import TestSupport

@testable import DLPipe
@testable import DLPipeQueue

/// Claims held ahead (docs/design/queue-schema.md, "Claims ahead"): running rows
/// without a slot, taken only where a host has plenty ready; a slot handed
/// over moves from one row to another without changing the host's count;
/// a stranded one gets a slot only within `per_host`, or goes back to
/// ready as it was.
@Suite struct SharedQueueAheadTests {
    let url: String

    init() throws {
        url = try PostgresCluster.shared().freshDatabase("ahead")
    }

    private func connect() throws -> PostgresConnection {
        let connection = try PostgresConnection(PostgresAddress(url))
        try SchemaMigrator().migrate(connection)
        return connection
    }

    private func number(_ connection: PostgresConnection, _ sql: String, _ parameters: [PostgresValue]) throws -> Int64 {
        try connection.execute(sql, parameters).rows[0].int("n")
    }

    private func inFlight(_ connection: PostgresConnection, _ queue: SharedQueue, _ host: String = "a.test") throws -> Int64 {
        try number(connection, "SELECT in_flight AS n FROM dlpipe.hosts WHERE job_id = $1 AND host = $2", [.int(queue.job), .text(host)])
    }

    private func slotHost(_ connection: PostgresConnection, _ id: Int64) throws -> String? {
        try connection.execute("SELECT slot_host FROM dlpipe.downloads WHERE id = $1", [.int(id)]).rows[0].optionalText("slot_host")
    }

    @Test func claimsAheadHoldNoSlotAndComeOnlyFromAHostWithPlentyReady() throws {
        let connection = try connect()
        let queue = try SharedQueue.open(job: "ahead", limits: JobLimits(perHost: 2), on: connection)
        _ = try queue.add(queuedRequests(12, hosts: ["a.test"]) + queuedRequests(5, hosts: ["b.test"], prefix: "b"), on: connection)
        let worker = try queue.register(hostname: "w", pid: 1, lease: 30, on: connection)
        #expect(try queue.claim(worker: worker, limit: 4, on: connection).count == 4)
        #expect(try inFlight(connection, queue) == 2)

        // a.test has 10 ready, twice 4 and more: 4 ahead, running, no slot.
        // b.test has 3 ready, fewer than twice 4: none.
        let ahead = try queue.claimAhead(worker: worker, hosts: ["a.test", "b.test"], limit: 4, on: connection)
        #expect(ahead.count == 4)
        #expect(Set(ahead.map(\.host)) == ["a.test"])
        for claim in ahead {
            #expect(try slotHost(connection, claim.id) == nil)
            #expect(claim.attempts == 1)
        }
        #expect(try inFlight(connection, queue) == 2, "a claim ahead takes no slot")
        #expect(try number(connection, "SELECT count(*) AS n FROM dlpipe.downloads WHERE worker_id = $1 AND status = 'running'", [.int(worker)]) == 8)
        // 6 ready are left on a.test, fewer than twice 4.
        #expect(try queue.claimAhead(worker: worker, hosts: ["a.test"], limit: 4, on: connection).isEmpty)
        #expect(try queue.claimAhead(worker: worker, hosts: ["a.test"], limit: 3, on: connection).count == 3)
    }

    /// A claim locks only the rows it takes: with `per_host` 16 and room
    /// for one, a claim whose transaction is still open leaves the other
    /// fifteen at the front of the line to another worker's claim ahead,
    /// which would skip any it had locked.
    @Test func aClaimLocksOnlyTheRowsItTakes() throws {
        let connection = try connect()
        let other = try connect()
        let queue = try SharedQueue.open(job: "locks", limits: JobLimits(perHost: 16), on: connection)
        let ids = try queue.add(queuedRequests(40, hosts: ["a.test"]), on: connection)
        let first = try queue.register(hostname: "w1", pid: 1, lease: 30, on: connection)
        let second = try queue.register(hostname: "w2", pid: 2, lease: 30, on: connection)
        let byId = ids.values.sorted()
        try connection.run("BEGIN")
        let claimed = try queue.claim(worker: first, limit: 1, on: connection)
        #expect(claimed.map(\.id) == [byId[0]])
        let ahead = try queue.claimAhead(worker: second, hosts: ["a.test"], limit: 4, on: other)
        try connection.run("COMMIT")
        #expect(ahead.map(\.id).sorted() == Array(byId[1...4]), "the next four in line, none skipped")
    }

    @Test func noClaimAheadWithAHostDelayOrForADeadWorker() throws {
        let connection = try connect()
        let spaced = try SharedQueue.open(job: "spaced", limits: JobLimits(perHost: 2, hostDelay: 0.5), on: connection)
        _ = try spaced.add(queuedRequests(20, hosts: ["a.test"]), on: connection)
        let worker = try spaced.register(hostname: "w", pid: 1, lease: 30, on: connection)
        #expect(try spaced.claimAhead(worker: worker, hosts: ["a.test"], limit: 4, on: connection).isEmpty)

        let queue = try SharedQueue.open(job: "dead", limits: JobLimits(perHost: 2), on: connection)
        _ = try queue.add(queuedRequests(20, hosts: ["a.test"]), on: connection)
        let gone = try queue.register(hostname: "w", pid: 2, lease: 30, on: connection)
        try queue.takeBack(worker: gone, on: connection)
        #expect(try queue.claimAhead(worker: gone, hosts: ["a.test"], limit: 4, on: connection).isEmpty)
    }

    @Test func aSlotHandedOverMovesToTheNextRowAndTheCountStays() throws {
        let connection = try connect()
        let queue = try SharedQueue.open(job: "hand-over", limits: JobLimits(perHost: 2), on: connection)
        _ = try queue.add(queuedRequests(20, hosts: ["a.test"]), on: connection)
        let worker = try queue.register(hostname: "w", pid: 1, lease: 30, on: connection)
        let slotted = try queue.claim(worker: worker, limit: 2, on: connection)
        let ahead = try queue.claimAhead(worker: worker, hosts: ["a.test"], limit: 4, on: connection)
        #expect(slotted.count == 2 && ahead.count == 4)

        // The first transfer ended and handed its slot to the first held ahead;
        // the second ended, its file placed at once, and handed its slot on too.
        _ = try queue.report(
            [ClaimReport(id: slotted[1].id, token: slotted[1].token, outcome: .finished)],
            freeing: [(slotted[0].id, slotted[0].token)],
            taking: [(ahead[0].id, ahead[0].token), (ahead[1].id, ahead[1].token)], on: connection)
        #expect(try inFlight(connection, queue) == 2)
        #expect(try slotHost(connection, slotted[0].id) == nil)
        #expect(try slotHost(connection, ahead[0].id) == "a.test")
        #expect(try slotHost(connection, ahead[1].id) == "a.test")
        // Taken again, or under a token that is not the row's: nothing moves.
        _ = try queue.report([], freeing: [], taking: [(ahead[0].id, ahead[0].token), (ahead[2].id, ahead[2].token + 1000)], on: connection)
        #expect(try inFlight(connection, queue) == 2)
        #expect(try slotHost(connection, ahead[2].id) == nil)

        // Their reports give the slots they took back.
        _ = try queue.report(ahead.prefix(2).map { ClaimReport(id: $0.id, token: $0.token, outcome: .finished) }, on: connection)
        #expect(try inFlight(connection, queue) == 0)
        // A dead worker's claims go back: the ahead ones give no slot back.
        try queue.takeBack(worker: worker, on: connection)
        #expect(try inFlight(connection, queue) == 0)
        #expect(try number(connection, "SELECT count(*) AS n FROM dlpipe.downloads WHERE job_id = $1 AND status = 'ready'", [.int(queue.job)]) == 17)
    }

    @Test func aStrandedClaimGetsASlotOnlyWithinPerHostOrGoesBackAsItWas() throws {
        let connection = try connect()
        let queue = try SharedQueue.open(job: "stranded", limits: JobLimits(perHost: 2), on: connection)
        _ = try queue.add(queuedRequests(20, hosts: ["a.test"]), on: connection)
        let worker = try queue.register(hostname: "w", pid: 1, lease: 30, on: connection)
        let other = try queue.register(hostname: "v", pid: 2, lease: 30, on: connection)
        let ahead = try queue.claimAhead(worker: worker, hosts: ["a.test"], limit: 3, on: connection)
        #expect(ahead.count == 3)
        // Another worker holds one of the two slots: one stranded claim gets the other.
        #expect(try queue.claim(worker: other, limit: 1, on: connection).count == 1)
        let promoted = try queue.promoteAhead(ahead.map { ($0.id, $0.token) }, on: connection)
        #expect(promoted == [ahead[0].id], "the first claimed first, and only within per_host")
        #expect(try inFlight(connection, queue) == 2)
        #expect(try slotHost(connection, ahead[0].id) == "a.test")

        // The others go back to ready as they were: no attempt, their place in line.
        let before = try connection.execute(
            "SELECT run_at::text AS run_at FROM dlpipe.downloads WHERE id = $1", [.int(ahead[1].id)]).rows[0].text("run_at")
        #expect(try queue.releaseAhead([(ahead[1].id, ahead[1].token), (ahead[2].id, ahead[2].token)], on: connection) == 2)
        let row = try connection.execute(
            "SELECT status, attempts, worker_id, claim_token, run_at::text AS run_at FROM dlpipe.downloads WHERE id = $1",
            [.int(ahead[1].id)]).rows[0]
        #expect(try row.text("status") == "ready" && row.int("attempts") == 0 && row.optionalInt("worker_id") == nil)
        #expect(try row.optionalInt("claim_token") == nil && row.text("run_at") == before)
        // A promoted one is not released; a released one not twice.
        #expect(try queue.releaseAhead([(ahead[0].id, ahead[0].token), (ahead[1].id, ahead[1].token)], on: connection) == 0)
        #expect(try inFlight(connection, queue) == 2)
    }

    /// A worker that dies or leaves (both a take-back) gives its claims held
    /// ahead back without the attempt their claim counted: they made no
    /// request. Claims that started (a slot, by the queue or handed over)
    /// keep theirs, and every slot comes back.
    @Test func aTakeBackKeepsNoAttemptOfAClaimHeldAheadThatNeverStarted() throws {
        let connection = try connect()
        let queue = try SharedQueue.open(job: "taken-back", limits: JobLimits(perHost: 3), on: connection)
        _ = try queue.add(queuedRequests(30, hosts: ["a.test"]), on: connection)
        for leaving in [false, true] {
            let worker = try queue.register(hostname: "w", pid: 1, lease: 30, on: connection)
            let slotted = try queue.claim(worker: worker, limit: 2, on: connection)
            let ahead = try queue.claimAhead(worker: worker, hosts: ["a.test"], limit: 4, on: connection)
            #expect(slotted.count == 2 && ahead.count == 4)
            // One gets the third slot from the queue, one is handed a slot (the report's take).
            #expect(try queue.promoteAhead([(ahead[0].id, ahead[0].token)], on: connection) == [ahead[0].id])
            _ = try queue.report([], freeing: [(slotted[1].id, slotted[1].token)], taking: [(ahead[1].id, ahead[1].token)], on: connection)
            #expect(try inFlight(connection, queue) == 3)
            if leaving {
                try queue.takeBack(worker: worker, on: connection)
            } else {
                try connection.execute("UPDATE dlpipe.workers SET lease_until = now() - interval '1 second' WHERE id = $1", [.int(worker)])
                #expect(try queue.takeBack(on: connection) == 6)
            }
            let attempts = { (id: Int64) throws -> Int64 in
                try self.number(connection, "SELECT attempts AS n FROM dlpipe.downloads WHERE id = $1 AND status = 'ready'", [.int(id)])
            }
            for claim in slotted + ahead.prefix(2) { #expect(try attempts(claim.id) == 1, "started: \(claim.id)") }
            for claim in ahead.suffix(2) { #expect(try attempts(claim.id) == 0, "never started: \(claim.id)") }
            #expect(try inFlight(connection, queue) == 0)
            // The next worker takes them as fresh claims (attempt 1, or 2 for the ones that started).
            try connection.execute("UPDATE dlpipe.downloads SET attempts = 0 WHERE job_id = $1", [.int(queue.job)])
        }
    }
}
