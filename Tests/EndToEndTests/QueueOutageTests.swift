import Foundation
import Testing
import TestSupport

/// A worker whose database stays away longer than it waits (max(60 s, 2 x
/// lease)) says so and exits 4, keeping its part files: the path of its
/// links' reconnects with backoff (ReconnectingConnection) to the end.
/// It takes a minute: the wait is the product's.
@Suite struct QueueOutageTests {
    @Test func aDatabaseAwayLongerThanTheWorkerWaitsIsExitFourWithPartFilesKept() async throws {
        let server = try FaultServer()
        let job = try LuaJob()
        let out = try TempDir.make("queue-outage")
        let cluster = try PostgresCluster.ownCluster()
        var stopped = false
        defer { if !stopped { cluster.stop() } }
        let queue = try cluster.freshDatabase("outage")
        try server.put("big.bin", randomBytes: 500_000)
        // 50 KB, then a stall until the client goes: the transfer is in flight
        // when the database goes (--timeout 300: the default 30 s could end the
        // stall first on a loaded machine, and the download with it).
        let path = try job.write("job.lua", "dl.add('\(server.url("/files/big.bin?stall=50000&stall_times=1"))')\n")
        let worker = try Subprocess(
            Paths.binary, ["run", path, "-d", out, "--queue", queue, "--name", "outage", "--lease", "2", "--json", "--timeout", "300"],
            // The watchdog counts from the spawn: the 60 s outage, plus the
            // start, which took 114 s at the start of a full suite on two
            // cores (with 150 s the watchdog killed the worker 36 s into its
            // outage).
            timeout: 300)
        let spawned = Date()
        let busy = await offThePool { worker.waitForLine(containing: "\"bytes\":50000,") }
        #expect(busy)
        let started = Date()
        print("queue outage: the transfer was under way \(Int(started.timeIntervalSince(spawned))) s after the spawn")
        cluster.stop()
        stopped = true
        let ended = await offThePool { worker.finish() }
        let waited = Date().timeIntervalSince(started)
        #expect(ended.status == 4, "\(ended.stderr)")
        #expect(ended.stderr.contains("cannot reach the shared queue at ") && ended.stderr.contains("part files are kept"), "\(ended.stderr)")
        // How long it was away and how long it waits, not one statement's
        // try ("tried for 0.7 s" beside "it waits 60 s").
        #expect(ended.stderr.range(of: #" for (59|6\d) s \(it waits 60 s\); last error: "#, options: .regularExpression) != nil, "\(ended.stderr)")
        #expect(!ended.stderr.contains("tried for"), "\(ended.stderr)")
        // It said so when its database went away, once, long before it gave up.
        let away = ended.stderr.components(separatedBy: "\n").filter { $0.hasPrefix("dlpipe: the shared queue at ") && $0.contains(" does not answer ") }
        #expect(away.count == 1, "\(ended.stderr)")
        #expect(away.first?.contains("it tries again for up to 60 s, then exits 4") == true, "\(away)")
        // It waited its outage (60 s with a lease of 2 s), not less.
        #expect(waited >= 59, "exited after \(waited) s")
        let parts = partFiles(under: out)
        #expect(parts.count == 1, "\(parts)")
        #expect(!FileManager.default.fileExists(atPath: out + "/big.bin"))
    }

    /// A database outage longer than the lease (and shorter than a worker
    /// waits) is survived by every worker: the first one back waits a lease
    /// before it takes back the claims of workers whose lease ran out, so the
    /// others, back from the same outage, keep theirs. Before, the first back
    /// declared the others dead at once and they exited 4 when they came back.
    @Test func anOutageLongerThanTheLeaseIsSurvivedByEveryWorker() async throws {
        let server = try FaultServer()
        let job = try LuaJob()
        let out = try TempDir.make("queue-outage-all")
        let cluster = try PostgresCluster.ownCluster()
        defer { cluster.stop() }
        let queue = try cluster.freshDatabase("outage")
        var adds = ""
        for index in 1...4 {
            try server.put("f\(index).bin", randomBytes: 240_000, seed: UInt64(index))
            // 4 s each: every transfer is under way through the outage.
            adds += "dl.add('\(server.url("/files/f\(index).bin?throttle=60000"))')\n"
        }
        let path = try job.write("job.lua", adds)
        let arguments = ["run", path, "-d", out, "--queue", queue, "--name", "outage", "--lease", "2", "--settle", "1", "-j", "2", "--json"]
        let first = try Subprocess.queueWorker(arguments)
        let second = try Subprocess.queueWorker(arguments)
        // Both hold claims whose transfers run when the database goes.
        let busy = await offThePool { first.waitForLine(containing: "\"event\":\"response\"") && second.waitForLine(containing: "\"event\":\"response\"") }
        #expect(busy)
        // Three leases away.
        try await offThePool { Result { try cluster.outage(seconds: 6) } }.get()
        let ends = await offThePool { [first.finish(), second.finish()] }
        for end in ends {
            #expect(end.status == 0, "\(end.stderr)")
            #expect(!end.stderr.contains("lost its lease"), "\(end.stderr)")
            // Each worker said when its database went away and when it was
            // back, once each and in that order (an outage was silent).
            let lines = end.stderr.components(separatedBy: "\n").filter { $0.hasPrefix("dlpipe: the shared queue at ") }
            #expect(lines.count == 2 && lines[0].contains(" does not answer (no heartbeat for ")
                && lines[1].contains(" answers again after ") && lines[1].hasSuffix("this worker's lease is renewed and it goes on with its downloads"),
                "\(end.stderr)")
        }
        #expect(listing(out).filter { !$0.hasPrefix(".") } == ["f1.bin", "f2.bin", "f3.bin", "f4.bin"], "\(listing(out))")
        for index in 1...4 {
            #expect(try server.requests(matching: "/files/f\(index).bin").count == 1, "f\(index).bin fetched once: no claim was taken back")
        }
    }
}
