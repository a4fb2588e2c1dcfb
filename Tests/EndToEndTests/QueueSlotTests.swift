@testable import DLPipe
@testable import DLPipeQueue
import Foundation
import Synchronization
import Testing
import TestSupport

/// A worker gives a host slot back when a transfer ends (schema version 5):
/// it holds more claims than its `-j` while their files wait to be placed,
/// and the job-wide `per_host` still bounds its transfers.
@Suite struct QueueSlotTests: QueueRunSuite {
    let fixture: QueueRunFixture

    init() throws {
        fixture = try QueueRunFixture(label: "slot", hosts: ["slot.queue.test"])
    }

    @Test func aWorkerHoldsMoreClaimsThanItsConcurrencyWhileItsTransfersStayWithinPerHost() async throws {
        // 24 files of 3 KB from /slow/ (100 KB/s: 30 ms each) on one host,
        // and a `finished` handler that keeps the Lua thread 0.1 s of CPU per
        // file: the files wait for their handler long after their transfers
        // ended. (A budget of 20 s: on a loaded machine that CPU time takes
        // longer, and a handler's budget counts from its call.)
        let host = hosts[0]
        let files = try (0..<24).map { index in
            try fixture.slowFile("f\(index).bin", size: 3_000 + index, seed: UInt64(index + 1), hostIndex: 0)
        }
        let jobFile = try job.write("job.lua", "dl.config{ budget = 20 }\n" + files.map { "dl.add('\($0.url)')\n" }.joined() + """
            dl.on("finished", function(d)
              local t = os.clock() while os.clock() - t < 0.1 do end
            end)
            """)
        let worker = try Subprocess(
            Paths.binary,
            ["run", jobFile, "-d", out, "--queue", queue, "--name", "slots", "--settle", "1", "-j", "2", "--per-host", "2"] + resolving,
            environment: ["NO_COLOR": "1"], timeout: 120)
        let ended = Atomic<Bool>(false)
        let finishing = Task { await offThePool { () -> (status: Int32, stdout: String, stderr: String) in
            defer { ended.store(true, ordering: .releasing) }
            return worker.finish()
        } }
        // Snapshots of the queue while the worker runs: the claims it holds,
        // and the host's in_flight against the running rows holding a slot.
        // The queue counts hosts with their port.
        let hostRow = "\(host):\(nginx.plainPort)"
        let seen = await offThePool { [queue] () -> (mostRunning: Int64, mostInFlight: Int64, mismatches: [String]) in
            var (mostRunning, mostInFlight, mismatches) = (Int64(0), Int64(0), [String]())
            guard let connection = try? PostgresConnection(PostgresAddress(queue)) else { return (0, 0, ["no connection"]) }
            while !ended.load(ordering: .acquiring) {
                guard let row = try? connection.execute(
                    """
                    SELECT h.in_flight,
                      (SELECT count(*) FROM dlpipe.downloads d WHERE d.job_id = h.job_id AND d.status = 'running') AS running,
                      (SELECT count(*) FROM dlpipe.downloads d WHERE d.job_id = h.job_id AND d.status = 'running' AND d.slot_host = h.host) AS slots
                    FROM dlpipe.hosts h WHERE h.host = $1
                    """, [.text(hostRow)]).rows.first,
                    let inFlight = try? row.int("in_flight"), let running = try? row.int("running"), let slots = try? row.int("slots")
                else {
                    usleep(10_000)  // the worker has not queued the job yet
                    continue
                }
                if inFlight != slots { mismatches.append("in_flight \(inFlight), rows holding a slot \(slots)") }
                mostRunning = max(mostRunning, running)
                mostInFlight = max(mostInFlight, inFlight)
                usleep(5_000)  // the sampling period, not a wait for a condition
            }
            return (mostRunning, mostInFlight, mismatches)
        }
        let run = await finishing.value
        #expect(run.status == 0, "\(run.stderr)")
        #expect(seen.mismatches.isEmpty, "\(seen.mismatches.prefix(5))")
        #expect(seen.mostInFlight <= 2, "in_flight reached \(seen.mostInFlight) under --per-host 2")
        // Claims outnumbered -j: slots went back while files waited for their handler.
        #expect(seen.mostRunning > 2, "the worker never held more than \(seen.mostRunning) claims")
        let served = nginx.requests(matching: "/slow" + dir)
        #expect(served.count == 24 && Set(served.map(\.uri)).count == 24, "served \(served.count) requests for 24 files")
        #expect(Nginx.peak(served) <= 2, "the host served \(Nginx.peak(served)) at once under --per-host 2")
        #expect(listing(out) == files.map(\.name).sorted())
        let broken = files.filter { !sameBytes(out + "/" + $0.name, $0.bytes) }.map(\.name)
        #expect(broken.isEmpty, "not whole: \(broken)")
        // Every slot went back, once: the host's count is zero, not below.
        let connection = try PostgresConnection(PostgresAddress(queue))
        #expect(try connection.execute("SELECT in_flight AS n FROM dlpipe.hosts WHERE host = $1", [.text(hostRow)]).rows[0].int("n") == 0)
        print("slots: at most \(seen.mostRunning) claims held at once by a worker of -j 2")
    }

    @Test func slotsHandedOverBetweenClaimsHeldAheadKeepTwoWorkersWithinPerHost() async throws {
        // 18 files of 120 KB from /slow/ (100 KiB/s: about a second each, a
        // smaller one would leave in one write, before nginx paces it) on one
        // host, two workers of -j 2 under a job-wide --per-host 3: plenty
        // ready, so each holds claims ahead and hands a slot to the next one
        // as a transfer ends, without the database; the host never serves
        // more than 3 at once, though the two could run 4.
        let files = try (0..<18).map { index in
            try fixture.slowFile("h\(index).bin", size: 120_000 + index, seed: UInt64(index + 100), hostIndex: 0)
        }
        let jobFile = try job.write("job.lua", files.map { "dl.add('\($0.url)')\n" }.joined())
        let arguments = ["run", jobFile, "-d", out, "--queue", queue, "--name", "handover", "--settle", "1", "-j", "2", "--per-host", "3"] + resolving
        let workers = try (0..<2).map { _ in try Subprocess.queueWorker(arguments) }
        let runs = await offThePool { workers.map { $0.finish() } }
        for run in runs { #expect(run.status == 0, "\(run.stderr)") }
        let served = nginx.requests(matching: "/slow" + dir)
        #expect(served.count == 18 && Set(served.map(\.uri)).count == 18, "served \(served.count) requests for 18 files")
        #expect(Nginx.peak(served) <= 3, "the host served \(Nginx.peak(served)) at once under --per-host 3")
        print("hand-over: at most \(Nginx.peak(served)) served at once; \(served.map(\.end).max()! - served.map(\.start).min()!) ms from the first request to the last end")
        #expect(listing(out) == files.map(\.name).sorted())
        let broken = files.filter { !sameBytes(out + "/" + $0.name, $0.bytes) }.map(\.name)
        #expect(broken.isEmpty, "not whole: \(broken)")
        let connection = try PostgresConnection(PostgresAddress(queue))
        let hostRow = "\(hosts[0]):\(nginx.plainPort)"
        #expect(try connection.execute("SELECT in_flight AS n FROM dlpipe.hosts WHERE host = $1", [.text(hostRow)]).rows[0].int("n") == 0)
        #expect(try connection.execute(
            "SELECT count(*) AS n FROM dlpipe.downloads d JOIN dlpipe.jobs j ON j.id = d.job_id WHERE j.name = 'handover' AND (d.status <> 'finished' OR d.attempts <> 1)"
        ).rows[0].int("n") == 0, "every download finished at its first attempt")
    }

    @Test func aCancelReachesADownloadThisWorkerHoldsAhead() async throws {
        // 12 files of 120 KB from /slow/ (about a second each), -j 1 under
        // --per-host 1: the worker transfers the first and holds the next
        // two ahead when the first one's response comes. Its handler cancels
        // them: they end cancelled, never requested, counted by done.
        let files = try (0..<12).map { index in
            try fixture.slowFile("c\(index).bin", size: 120_000 + index, seed: UInt64(index + 300), hostIndex: 0)
        }
        let jobFile = try job.write("job.lua", "local ids = {}\n" + files.enumerated().map { "ids[\($0.offset + 1)] = dl.add('\($0.element.url)')\n" }.joined() + """
            dl.on("response", function(d)
              if d.id == ids[1] then dl.cancel(ids[2]); dl.cancel(ids[3]) end
            end)
            dl.on("done", function(s) dl.log("done: cancelled " .. s.cancelled .. ", finished " .. s.finished) end)
            """)
        let run = await offThePool { [self] in
            try? Subprocess.queueWorker(
                ["run", jobFile, "-d", out, "--queue", queue, "--name", "cancel-ahead", "--settle", "1", "-j", "1", "--per-host", "1"] + resolving
            ).finish()
        }
        let output = (run?.stdout ?? "") + (run?.stderr ?? "")
        #expect(run?.status == 0 && output.contains("done: cancelled 2, finished 10"), "\(output)")
        let served = Set(nginx.requests(matching: "/slow" + dir).map(\.uri))
        #expect(!served.contains { $0.hasSuffix("/c1.bin") || $0.hasSuffix("/c2.bin") }, "a cancelled download was requested")
        #expect(listing(out) == files.map(\.name).filter { $0 != "c1.bin" && $0 != "c2.bin" }.sorted())
        let connection = try PostgresConnection(PostgresAddress(queue))
        #expect(try connection.execute(
            "SELECT count(*) AS n FROM dlpipe.downloads d JOIN dlpipe.jobs j ON j.id = d.job_id WHERE j.name = 'cancel-ahead' AND d.status = 'cancelled'"
        ).rows[0].int("n") == 2)
    }
}
