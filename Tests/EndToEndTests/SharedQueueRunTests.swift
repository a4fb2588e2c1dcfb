import Foundation
import Testing
import TestSupport

/// Several `dlpipe run --queue` worker processes share one job through a real
/// PostgreSQL (issue 11): every file whole and fetched once, per-host limits
/// across all workers, `done` once per run with the job-wide counts.
@Suite struct SharedQueueRunTests {
    let nginx: Nginx
    let dir = Nginx.uniquePath()
    let job: LuaJob
    let out: String
    let queue: String

    init() throws {
        nginx = try Nginx.shared()
        job = try LuaJob()
        out = try TempDir.make("shared-out")
        queue = try PostgresCluster.shared().freshDatabase("run")
    }

    /// Three host names, all nginx on 127.0.0.1 (dlpipe counts hosts by name).
    private let hosts = ["a.queue.test", "b.queue.test", "c.queue.test"]

    private var resolving: [String] {
        hosts.flatMap { ["--resolve", "\($0):\(nginx.plainPort):127.0.0.1"] }
    }

    /// `count` files spread over the hosts; their URLs and bytes by name.
    private func files(_ count: Int, size: Int) throws -> [(name: String, url: String, bytes: [UInt8])] {
        try (0..<count).map { index in
            let name = "f\(index).bin"
            let bytes = try nginx.put("/slow" + dir + "/" + name, randomBytes: size + index, seed: UInt64(index + 1))
            return (name, nginx.url("/slow" + dir + "/" + name, host: hosts[index % hosts.count], tls: false), bytes)
        }
    }

    private func worker(_ jobFile: String, _ extra: [String] = []) async throws -> DLPipeRun {
        try await DLPipeRun.run(
            ["run", jobFile, "-d", out, "--queue", queue, "--name", "mirror", "--settle", "1", "-j", "4", "--per-host", "2"]
                + resolving + extra)
    }

    /// The most requests of `requests` that were at the server at one time.
    private func peak(_ requests: [Nginx.Request]) -> Int {
        var edges: [(at: Int, step: Int)] = []
        for request in requests {
            edges.append((request.start, 1))
            edges.append((request.end, -1))
        }
        edges.sort { $0.at != $1.at ? $0.at < $1.at : $0.step < $1.step }
        var now = 0
        var most = 0
        for (_, step) in edges {
            now += step
            most = max(most, now)
        }
        return most
    }

    /// Every file of `files` whole under its own name, nothing else, no part file left.
    private func expectWholeAndAlone(_ files: [(name: String, url: String, bytes: [UInt8])]) {
        #expect(listing(out) == files.map(\.name).sorted(), "numbered copies or strays: \(listing(out).filter { !$0.hasPrefix("f") || $0.contains(".part") || $0.split(separator: ".").count > 2 })")
        let broken = files.filter { !sameBytes(out + "/" + $0.name, $0.bytes) }.map(\.name)
        #expect(broken.isEmpty, "not whole: \(broken)")
        let parts = FileManager.default.enumerator(atPath: out)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".part") } ?? []
        #expect(parts.isEmpty, "part files left: \(parts)")
    }

    @Test func threeWorkersShareOneJobOverThreeHosts() async throws {
        // 210 files from nginx's /slow/ (100 KB/s), so each transfer lasts
        // about a tenth of a second and the workers' claims overlap; --per-host 2.
        let files = try files(210, size: 12_000)
        let jobFile = try job.write("job.lua", files.map { "dl.add('\($0.url)')\n" }.joined() + """
            dl.on("done", function(s)
              dl.log("done ran: finished " .. s.finished .. ", failed " .. s.failed)
            end)
            """)
        let runs = try await withThrowingTaskGroup(of: DLPipeRun.self) { group in
            for _ in 0..<3 { group.addTask { try await worker(jobFile) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for run in runs { #expect(run.status == 0, "\(run.stderr)") }
        let doneLines = runs.flatMap { $0.stderr.split(separator: "\n").filter { $0.contains("done ran:") } }
        #expect(doneLines.count == 1, "done ran \(doneLines.count) times")
        #expect(doneLines.first?.hasSuffix("done ran: finished 210, failed 0") == true, "\(doneLines)")
        let served = nginx.requests(matching: "/slow" + dir)
        #expect(served.count == 210, "served \(served.count) requests for 210 files")
        #expect(Set(served.map(\.uri)).count == 210)
        for host in hosts {
            let peakHere = peak(served.filter { $0.host == host })
            #expect(peakHere <= 2, "\(host) served \(peakHere) at once under --per-host 2")
        }
        expectWholeAndAlone(files)
        // The work was shared: each worker's summary counts its own files.
        let perWorker = runs.map { run in run.stderr.split(separator: "\n").filter { $0.hasPrefix("finished ") }.count }
        #expect(perWorker.reduce(0, +) == 210, "\(perWorker)")
    }
}
