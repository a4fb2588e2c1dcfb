@testable import DLPipe
import Foundation
import Testing
import TestSupport

/// A server's Retry-After holds its host back for every worker of the job,
/// not only for the one that got it. The queue's `next_at` stopped new
/// claims, but the other worker's claims held ahead started on the slots
/// its own transfers handed over: 24 requests in a 4 s hold from a worker
/// with `-j 2`. Now the report that sets the hold tells every worker
/// (NOTIFY), and none hands a slot of that host over until it ends.
@Suite struct QueueRetryAfterTests: QueueRunSuite {
    let fixture: QueueRunFixture

    init() throws {
        fixture = try QueueRunFixture(label: "retry-after", hosts: [])
    }

    /// With retries, and with none left (`--retries 0`: the 503 fails its
    /// download for good, and its hold was not written: the other worker
    /// sent 30 requests in the 3 s pause).
    @Test(arguments: [true, false])
    func aRetryAfterHoldsTheHostBackForEveryWorker(retried: Bool) async throws {
        let server = try FaultServer()
        let count = 200
        var bytes: [String: [UInt8]] = [:]
        var urls: [String] = []
        for index in 1...count {
            let name = String(format: "f%03d.bin", index)
            bytes[name] = try server.put(name, randomBytes: 500, seed: UInt64(index))
            // Each answer takes 50 ms, so both workers are busy when the 503 comes.
            let query = index == 30 ? "status=503&retry_after=3&fail_times=1" : "delay=0.05"
            urls.append(server.url("/files/\(name)?\(query)"))
        }
        let jobFile = try job.write("job.lua", urls.map { "dl.add('\($0)')" }.joined(separator: "\n"))
        let workers = try (0..<2).map { _ in
            try Subprocess(
                Paths.binary,
                ["run", jobFile, "-d", out, "--queue", queue, "--name", "retry-after", "--settle", "1", "-j", "2",
                 "--per-host", "4"] + (retried ? [] : ["--retries", "0"]),
                environment: ["NO_COLOR": "1"], timeout: 180)
        }
        let ended = await offThePool { workers.map { $0.finish() } }
        let code: Int32 = retried ? 0 : 1
        #expect(ended.map(\.status) == [code, code], "\(ended.map(\.stderr))")
        for (name, data) in bytes where retried || name != "f030.bin" {
            #expect(sameBytes(out + "/" + name, data), "\(name)")
        }

        let requests = try server.requests(matching: "/files/")
        let refused = try #require(requests.first { $0["path"] as? String == "/files/f030.bin" }?["time"] as? Double)
        // The hold reaches the other worker with the report's commit, a few
        // milliseconds after the 503: what it started before then, and what
        // was in flight, may come in the first half second.
        let during = requests.compactMap { $0["time"] as? Double }.filter { $0 > refused + 0.5 && $0 < refused + 2.9 }
        #expect(during.isEmpty, "\(during.count) requests to the host while its Retry-After held it back")
        let asked = requests.filter { $0["path"] as? String == "/files/f030.bin" }.compactMap { $0["time"] as? Double }
        #expect(asked.count == (retried ? 2 : 1))
        if retried { #expect((asked.last ?? 0) - refused >= 3, "the retry came before the server's Retry-After") }
    }

    /// The worker that got the Retry-After holds the host on its own clock
    /// from the answer on, and a claim from the queue must not lift that
    /// hold before the queue knows of it. Between the answer and the report
    /// that carries the hold (a `retrying` handler runs in between), the
    /// slot went back and the claims held ahead were given slots again by
    /// the queue, and their start lifted the hold: a request 11 ms after the
    /// 503 in 1 of 13 runs; with a slow handler, in every run.
    @Test func aClaimBeforeTheHoldIsReportedDoesNotLiftIt() async throws {
        let server = try FaultServer()
        var bytes: [String: [UInt8]] = [:]
        var adds = [String]()
        for index in 1...6 {
            let name = "g\(index).bin"
            bytes[name] = try server.put(name, randomBytes: 500, seed: UInt64(100 + index))
            let query = index == 1 ? "?status=503&retry_after=3&fail_times=1" : ""
            adds.append("dl.add{ url = '\(server.url("/files/\(name)\(query)"))', priority = \(index == 1 ? 10 : 0) }")
        }
        // The handler spins 0.3 s of CPU time; a budget of 30 s of run time
        // keeps a loaded machine (which gives it that CPU slowly) from
        // turning the spin into a budget failure.
        let jobFile = try job.write("job.lua", "dl.config{ budget = 30 }\n" + adds.joined(separator: "\n") + """

            dl.on("retrying", function(e)
              local t = os.clock() while os.clock() - t < 0.3 do end
            end)
            """)
        let worker = try Subprocess(
            Paths.binary,
            ["run", jobFile, "-d", out, "--queue", queue, "--name", "own-hold", "--settle", "1", "-j", "4", "--per-host", "1"],
            environment: ["NO_COLOR": "1"], timeout: 120)
        let ended = await offThePool { worker.finish() }
        #expect(ended.status == 0, "\(ended.stderr)")
        for (name, data) in bytes { #expect(sameBytes(out + "/" + name, data), "\(name)") }
        let requests = try server.requests(matching: "/files/")
        let refused = try #require(requests.first { ($0["path"] as? String) == "/files/g1.bin" }?["time"] as? Double)
        let during = requests.compactMap { request -> String? in
            guard let time = request["time"] as? Double, time > refused, time < refused + 2.9 else { return nil }
            return "\(request["path"] ?? "?") at +\(Int((time - refused) * 1000)) ms"
        }
        #expect(during.isEmpty, "requests while the worker's own Retry-After held the host: \(during)")
    }
}
