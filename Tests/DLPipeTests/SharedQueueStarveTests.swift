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

    /// Many idle hosts and one busy host with many downloads ready: the look
    /// probes each idle host's ready downloads by its host, at most one row
    /// each, on a new job's tables (no statistics yet), never the job's
    /// ready rows once per host.
    @Test func theLookReadsAtMostOneReadyRowPerIdleHost() throws {
        let connection = try PostgresConnection(PostgresAddress(try PostgresCluster.shared().freshDatabase("starve_many")))
        try SchemaMigrator().migrate(connection)
        let queue = try SharedQueue.open(job: "starve_many", limits: JobLimits(perHost: 1), on: connection)
        let idle = (0..<200).map { "idle\($0).test" }
        _ = try queue.add(queuedRequests(2_000, hosts: ["busy.test"]) + queuedRequests(idle.count, hosts: idle, prefix: "i"), on: connection)
        // The idle hosts' downloads ended; the busy host has a transfer running.
        try connection.execute("UPDATE dlpipe.downloads SET status = 'finished', ended_at = now() WHERE host <> 'busy.test'")
        try connection.execute("UPDATE dlpipe.hosts SET in_flight = 1 WHERE host = 'busy.test'")
        #expect(try !queue.hostsStarve(on: connection))
        let plan = try connection.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + SharedQueue.hostsStarveStatement, [.int(queue.job), .textArray([])]
        ).rows[0].text("QUERY PLAN")
        let read = downloadRowsRead(try #require(JSONSerialization.jsonObject(with: Data(plan.utf8)) as? [[String: Any]])[0]["Plan"])
        #expect(read <= idle.count, "rows of dlpipe.downloads read: \(read)")
    }
}

/// Rows a plan read from `dlpipe.downloads`: each scan's rows returned and
/// filtered out, over all its loops, and what joins above it filtered out.
private func downloadRowsRead(_ node: Any?) -> Int {
    guard let node = node as? [String: Any] else { return 0 }
    let loops = node["Actual Loops"] as? Int ?? 1
    var read = (node["Rows Removed by Join Filter"] as? Int ?? 0) * loops
    if node["Relation Name"] as? String == "downloads" {
        read += ((node["Actual Rows"] as? Int ?? 0) + (node["Rows Removed by Filter"] as? Int ?? 0)) * loops
    }
    return read + (node["Plans"] as? [Any] ?? []).reduce(0) { $0 + downloadRowsRead($1) }
}
