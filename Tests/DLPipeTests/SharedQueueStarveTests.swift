import Foundation
import Testing
import TestSupport

@testable import DLPipe
@testable import DLPipeQueue

/// `SharedQueue.hostsStarve`: a host with downloads due and nothing in
/// flight waits for the queue's claim, unless a host delay or Retry-After
/// holds it back, or the asking worker holds claims ahead of it.
@Suite struct SharedQueueStarveTests {
    @Test func aHostWithWorkDueAndNothingInFlightStarves() throws {
        let connection = try PostgresConnection(PostgresAddress(try PostgresCluster.shared().freshDatabase("starve")))
        try SchemaMigrator().migrate(connection)
        let queue = try SharedQueue.open(job: "starve", limits: JobLimits(perHost: 1), on: connection)
        _ = try queue.add(queuedRequests(4, hosts: ["a.test", "b.test"]), on: connection)
        let worker = try queue.register(hostname: "w", pid: 1, lease: 30, on: connection)
        // Nothing claimed: both hosts wait.
        #expect(try queue.hostsStarve(on: connection))
        // One transfer a host: none waits.
        #expect(try queue.claim(worker: worker, limit: 2, on: connection).count == 2)
        #expect(try !queue.hostsStarve(on: connection))
        // b.test's transfer ended: b.test waits, unless the worker holds claims ahead of it.
        let onB = try connection.execute(
            "SELECT id, claim_token FROM dlpipe.downloads WHERE host = 'b.test' AND status = 'running'").rows[0]
        #expect(try queue.giveBack([(try onB.int("id"), try onB.int("claim_token"))], on: connection) == 1)
        #expect(try queue.hostsStarve(on: connection))
        #expect(try !queue.hostsStarve(holding: ["b.test"], on: connection))
        // A Retry-After holds b.test back: it waits for its time, not for a slot.
        try connection.execute("UPDATE dlpipe.hosts SET next_at = now() + interval '1 hour' WHERE host = 'b.test'")
        #expect(try !queue.hostsStarve(on: connection))
        // Its downloads scheduled for later: nothing due, nothing waits.
        try connection.execute("UPDATE dlpipe.hosts SET next_at = now() WHERE host = 'b.test'")
        try connection.execute("UPDATE dlpipe.downloads SET run_at = now() + interval '1 hour' WHERE host = 'b.test' AND status = 'ready'")
        #expect(try !queue.hostsStarve(on: connection))
    }
}
