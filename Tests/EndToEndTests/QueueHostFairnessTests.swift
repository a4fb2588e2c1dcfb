import Foundation
import Testing
import TestSupport

@testable import DLPipe

/// Claims held ahead never keep a host waiting (issue #36): while a host
/// has downloads due and nothing in flight, workers claim nothing ahead and
/// give back what they hold ahead, so the queue's claim (least recently
/// served host first) spreads the slots over every host.
@Suite struct QueueHostFairnessTests {
    @Test func everyHostIsServedFromTheStartWhenSlotsAreFewerThanHosts() async throws {
        // 2 workers of -j 2: 4 transfers at once, for 6 hosts of 60 files
        // each (0.25 s a file at 20 KB/s), enough per host for claims ahead.
        let server = try FaultServer()
        let job = try LuaJob()
        let out = try TempDir.make("queue-fair")
        let url = try PostgresCluster.shared().freshDatabase("fair")
        let hosts = (1...6).map { "h\($0).fair.test" }
        var adds = ""
        for index in 0..<360 {
            try server.put("f\(index).bin", randomBytes: 5000, seed: UInt64(index + 1))
            adds += "dl.add('http://\(hosts[index % hosts.count]):\(server.port)/files/f\(index).bin?throttle=20000')\n"
        }
        let jobFile = try job.write("job.lua", adds)
        let resolving = hosts.flatMap { ["--resolve", "\($0):\(server.port):127.0.0.1"] }
        let arguments = ["run", jobFile, "-d", out, "--queue", url, "--name", "fair", "--settle", "1", "-j", "2",
                         "--per-host", "2"] + resolving
        let workers = [try Subprocess.queueWorker(arguments), try Subprocess.queueWorker(arguments)]
        let ends = await offThePool { workers.map { $0.finish() } }
        for end in ends { #expect(end.status == 0, "\(end.stderr)") }
        #expect(listing(out).count == 360)

        // In the order the server saw them: each host's first request came
        // within the first quarter of the job. Before, 2 of the 6 hosts got
        // theirs after two thirds of it, once the others ran dry.
        let served = try server.requests(matching: "/files/")
            .compactMap { request -> (time: Double, host: String)? in
                guard let time = request["time"] as? Double, let host = (request["headers"] as? [String: String])?["host"] else { return nil }
                return (time, String(host.split(separator: ":")[0]))
            }
            .sorted { $0.time < $1.time }
        #expect(served.count == 360)
        for host in hosts {
            let first = served.firstIndex { $0.host == host }
            #expect(first.map { $0 < 90 } == true, "\(host): first request was number \(first.map { $0 + 1 } ?? -1) of \(served.count)")
        }
    }
}
