import Foundation
import Testing
import TestSupport

@testable import DLPipe
@testable import DLPipeQueue

/// A worker frozen past its lease and woken requests nothing (issue #36):
/// the other workers took its claims back, held ahead ones too, and fetch
/// them; it starts no transfer before its heartbeat, which tells it that
/// its lease is gone (exit 4).
@Suite struct QueueFrozenWorkerTests: QueueRunSuite {
    let fixture: QueueRunFixture

    init() throws {
        fixture = try QueueRunFixture(label: "frozen", hosts: ["a.frozen.test", "b.frozen.test"])
    }

    private func spawnWorker(_ jobFile: String) throws -> Subprocess {
        try .queueWorker(
            ["run", jobFile, "-d", out, "--queue", queue, "--name", "frozen", "--settle", "1", "-j", "2",
             "--per-host", "2", "--lease", "3"] + resolving)
    }

    /// The pid of a worker of the job that holds claims ahead and transfers
    /// (rows with a host slot), and has reported a few files: the requests
    /// of its first claims went out long ago. (Frozen the moment its first
    /// claims showed, it could stop between the fence's check and curl's
    /// sending of their requests, which it then sends on waking: the
    /// window the fence leaves, a few microseconds on an idle machine.)
    private func workerHoldingAhead(on connection: PostgresConnection) throws -> pid_t? {
        let row = try connection.execute(
            """
            SELECT w.pid FROM dlpipe.workers w
            WHERE w.stopped_at IS NULL
              AND EXISTS (SELECT 1 FROM dlpipe.downloads d WHERE d.worker_id = w.id AND d.status = 'running' AND d.ahead)
              AND EXISTS (SELECT 1 FROM dlpipe.downloads d WHERE d.worker_id = w.id AND d.status = 'running' AND d.slot_host IS NOT NULL)
              AND (SELECT coalesce(sum(r.finished), 0) FROM dlpipe.run_workers r WHERE r.worker_id = w.id) >= 4
            LIMIT 1
            """
        ).rows.first
        return try row.map { pid_t(try $0.int("pid")) }
    }

    /// Whether the process is stopped (state T in /proc/PID/stat).
    private static func isStopped(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("T")
    }

    @Test func aWorkerWokenPastItsLeaseRequestsNothingTheOthersTookBack() async throws {
        // 120 files of 150 KB from nginx's /slow/ (100 KB/s after the first
        // 100 KB: under a second each) on two hosts: enough ready rows per
        // host that the workers hold claims ahead, transfers under way when
        // a worker is frozen, and ending while it is, so that it wakes with
        // slots to hand over at once.
        let files = try (0..<120).map { index in
            try fixture.slowFile("f\(index).bin", size: 150_000 + index, seed: UInt64(index + 1), hostIndex: index)
        }
        let jobFile = try job.write("job.lua", files.map { "dl.add('\($0.url)')\n" }.joined())
        let workers = [try spawnWorker(jobFile), try spawnWorker(jobFile)]
        let queue = self.queue
        let (picked, froze, declared) = await offThePool { () -> (Subprocess?, Double?, Bool) in
            // Frozen once it holds claims ahead while it transfers (asked
            // on one connection, at most 60 s on a loaded machine).
            let connection = try? PostgresConnection(PostgresAddress(queue))
            var pid: pid_t?
            let start = Date().addingTimeInterval(60)
            while pid == nil && Date() < start {
                pid = try? connection.flatMap { try workerHoldingAhead(on: $0) }
                if pid == nil { usleep(10_000) }
            }
            guard let frozen = workers.first(where: { $0.pid == pid }) else { return (nil, nil, false) }
            frozen.signal(SIGSTOP)
            let stopDeadline = Date().addingTimeInterval(10)
            while !Self.isStopped(frozen.pid) && Date() < stopDeadline { usleep(1000) }
            let froze = Self.isStopped(frozen.pid) ? Date().timeIntervalSince1970 : nil
            // Until the other worker declares it dead (at most 60 s on a loaded machine).
            let deadline = Date().addingTimeInterval(60)
            var declared = false
            while !declared && Date() < deadline {
                declared = !((try? connection?.execute(
                    "SELECT 1 FROM dlpipe.workers WHERE pid = $1 AND stopped_at IS NOT NULL", [.int(Int64(frozen.pid))]
                ).rows.isEmpty) ?? true)
                if !declared { usleep(100_000) }
            }
            frozen.signal(SIGCONT)
            return (frozen, froze, declared)
        }
        guard let frozen = picked else {
            let ends = await offThePool { workers.map { $0.finish() } }
            Issue.record("no worker held claims ahead while it transferred: \(ends.map(\.stderr))")
            return
        }
        #expect(declared, "the frozen worker was never declared dead")
        let other = workers.first { $0.pid != frozen.pid }!
        let (woken, survivor) = await offThePool { (frozen.finish(), other.finish()) }
        #expect(survivor.status == 0, "\(survivor.stderr)")
        #expect(woken.status == 4, "\(woken.stderr)")
        #expect(woken.stderr.contains("this worker lost its lease"), "\(woken.stderr)")
        guard let froze else {
            Issue.record("the worker never showed as stopped")
            return
        }
        // Its transfers in flight when it froze were taken back and fetched
        // again by the other worker: at least once. Their requests began
        // before it froze. Requests that began a second after it froze (its
        // lease, renewed at most a second before, ran out no sooner than two
        // seconds after) are the other worker's, and any of the woken one:
        // no URL among them twice.
        let cut = Int((froze + 1) * 1000)
        let served = nginx.requests(matching: "/slow" + dir)
        var later: [String: Int] = [:]
        for request in served where request.start >= cut { later[request.uri, default: 0] += 1 }
        let twice = later.filter { $0.value > 1 }.keys.sorted()
        let detail = served.filter { twice.contains($0.uri) }.map { "\($0.uri) start \($0.start - Int(froze * 1000)) ms end \($0.end - Int(froze * 1000)) ms connection \($0.connection) status \($0.status)" }
        #expect(twice.isEmpty, "requested again after the freeze, by the woken worker: \(detail)")
        #expect(Set(served.map(\.uri)).count == files.count)
        for host in hosts {
            let peak = Nginx.peak(served.filter { $0.host == host && $0.start >= cut })
            #expect(peak <= 2, "\(host) served \(peak) at once under --per-host 2 once the worker woke")
        }
        #expect(listing(out) == files.map(\.name).sorted())
        let broken = files.filter { !sameBytes(out + "/" + $0.name, $0.bytes) }.map(\.name)
        #expect(broken.isEmpty, "not whole: \(broken)")
    }
}
