@testable import DLPipe
@testable import DLPipeQueue
import Foundation
import Testing
import TestSupport

/// A run whose workers all stopped (SIGTERM of the last one, or kill -9 and
/// a lease run out) before it ended: the next run starts afresh and asks
/// for what its own top level adds, nothing else. The interrupted run's
/// rows had stayed ready, and the next run claimed and fetched them all,
/// even URLs its job file no longer added.
@Suite struct QueueInterruptedRunTests: QueueRunSuite {
    let fixture: QueueRunFixture

    init() throws {
        fixture = try QueueRunFixture(label: "interrupted", hosts: ["interrupted.queue.test"])
    }

    @Test(arguments: ["SIGTERM", "SIGKILL"])
    func theNextRunFetchesOnlyWhatItAdds(_ stop: String) async throws {
        // 300 KB at 100 KiB/s each: none is whole when the first run stops.
        var urls: [String] = []
        var bodies: [[UInt8]] = []
        for index in 0..<12 {
            let file = try fixture.slowFile("f\(index).bin", size: 300_000, seed: UInt64(20 + index), hostIndex: 0)
            urls.append(file.url)
            bodies.append(file.bytes)
        }
        let jobFile = try job.write("job.lua", """
            local urls = { \(urls.map { "'\($0)'" }.joined(separator: ", ")) }
            for i = 1, tonumber(dl.var.n) do dl.add(urls[i]) end
            """)
        let name = "interrupted-" + stop.lowercased()
        func arguments(_ count: Int) -> [String] {
            ["run", jobFile, "-d", out, "--queue", queue, "--name", name, "--settle", "0", "-j", "2", "--lease", "2",
             "--var", "n=\(count)", "--json"] + resolving
        }
        let first = try Subprocess(Paths.binary, arguments(12), environment: ["NO_COLOR": "1"], timeout: 180)
        let firstStatus = await offThePool { () -> Int32 in
            _ = first.waitForLine(containing: "\"event\":\"progress\"")
            first.signal(stop == "SIGTERM" ? SIGTERM : SIGKILL)
            return first.finish().status
        }
        #expect(firstStatus == (stop == "SIGTERM" ? 130 : 128 + SIGKILL))
        let connection = try PostgresConnection(PostgresAddress(queue))
        if stop == "SIGKILL" {
            // The killed worker's lease runs out by the database's clock.
            _ = try pollUntil(seconds: 20) {
                try connection.execute(
                    """
                    SELECT count(*) AS live FROM dlpipe.workers w
                    JOIN dlpipe.jobs j ON j.id = w.job_id WHERE j.name = $1 AND w.lease_until >= now()
                    """, [.text(name)]
                ).rows[0].int("live") == 0 ? true : nil
            }
        }
        let secondStart = Int(Date().timeIntervalSince1970 * 1000)
        let secondArguments = arguments(2)
        let second = await offThePool {
            try? Subprocess(Paths.binary, secondArguments, environment: ["NO_COLOR": "1"], timeout: 180).finish()
        }
        #expect(second?.status == 0, "\(second?.stderr ?? "")")
        // What the second run asked for: requests that began after it started.
        let asked = nginx.requests(matching: "/slow" + dir + "/").filter { $0.start >= secondStart - 1 }.map(\.uri).sorted()
        #expect(asked == [urls[0], urls[1]].map { URL(string: $0)!.path }.sorted())
        #expect(listing(out).filter { !$0.hasPrefix(".") }.sorted() == ["f0.bin", "f1.bin"])
        #expect(sameBytes(out + "/f0.bin", bodies[0]) && sameBytes(out + "/f1.bin", bodies[1]))
        // The first run's other rows ended with it, saying why.
        let rows = try connection.execute(
            """
            SELECT d.status, d.last_error FROM dlpipe.downloads d JOIN dlpipe.jobs j ON j.id = d.job_id
            WHERE j.name = $1 AND d.status <> 'finished'
            """, [.text(name)]
        ).rows
        #expect(rows.count == 10)
        for row in rows {
            #expect(try row.text("status") == "cancelled")
            #expect(try row.optionalText("last_error") == SharedQueue.interruptedRunError)
        }
        let slots = try connection.execute(
            "SELECT h.in_flight FROM dlpipe.hosts h JOIN dlpipe.jobs j ON j.id = h.job_id WHERE j.name = $1", [.text(name)]
        ).rows
        #expect(try slots.map { try $0.int("in_flight") } == [0])
    }
}
