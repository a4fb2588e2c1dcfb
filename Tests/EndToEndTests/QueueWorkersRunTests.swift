@testable import DLPipe
@testable import DLPipeQueue
import Foundation
import Synchronization
import Testing
import TestSupport

/// Several `dlpipe run --queue` workers of one job, as processes: they exit
/// together when the run ends (a NOTIFY, not their polls), a worker joining
/// a run does not send the job's top-level adds again, and `max_downloads`
/// is the whole run's.
@Suite struct QueueWorkersRunTests: QueueRunSuite {
    let fixture: QueueRunFixture

    init() throws {
        fixture = try QueueRunFixture(label: "workers", hosts: ["a.workers.test", "b.workers.test", "c.workers.test"])
    }

    /// `count` files of /slow/ (100 KB/s) spread over the hosts; their URLs.
    private func files(_ count: Int, size: Int) throws -> [String] {
        try (0..<count).map { index in
            try fixture.slowFile("f\(index).bin", size: size, seed: UInt64(index + 1), hostIndex: index).url
        }
    }

    private func spawnWorker(_ jobFile: String, _ extra: [String] = [], environment: [String: String] = [:]) throws -> Subprocess {
        try .queueWorker(
            ["run", jobFile, "-d", out, "--queue", queue, "--name", "workers", "-j", "2", "--per-host", "2"] + resolving + extra,
            environment: environment)
    }

    private func connection() throws -> PostgresConnection { try PostgresConnection(PostgresAddress(queue)) }

    @Test func everyWorkerExitsAtTheRunsEndNotAtItsNextPollAndOnlyOneSendsTheTopLevel() async throws {
        // Polls 30 s apart: a worker that learnt of the run's end by its poll
        // would exit up to 30 s after it; by the run's NOTIFY, at once.
        let poll = 30.0
        let bound = 5.0  // well under the poll, generous for a loaded machine
        // 0.6 s each: one worker alone (-j 2) would need about 15 s, so all
        // three join one run even when one starts late on a loaded machine;
        // with all three, about 5 s.
        let urls = try files(48, size: 60_000)
        let jobFile = try job.write("job.lua", urls.map { "dl.add('\($0)')\n" }.joined())
        let environment = ["DLPIPE_QUEUE_POLL_SECONDS": String(poll)]
        let extra = ["--settle", "0"]
        // All three at once, as cron starts them: one sends the top level, the
        // others wait for its turn to end and read the ids.
        let workers = try (0..<3).map { _ in try spawnWorker(jobFile, extra, environment: environment) }
        // Each exit's time taken by a thread of its own, started now and
        // blocked in waitid: not by a task, which a busy test process may
        // start long after the exits (three equal lags of 22 s in a run of
        // 135 tests at once), nor from the pipes' end, which a child another
        // test spawned meanwhile may hold open.
        let exitTimes = Mutex<[Int: Double]>([:])
        let exited = DispatchGroup()
        for (index, worker) in workers.enumerated() {
            exited.enter()
            Thread.detachNewThread {
                worker.waitForExit()
                let now = Date().timeIntervalSince1970
                exitTimes.withLock { $0[index] = now }
                exited.leave()
            }
        }
        _ = await offThePool { exited.wait(timeout: .now() + 150) }
        let outputs = await offThePool { workers.map { $0.finish() } }
        let times = exitTimes.withLock { $0 }
        let exits = outputs.enumerated().map { ($1.status, $1.stderr, times[$0] ?? .infinity) }
        for (status, stderr, _) in exits { #expect(status == 0, "\(stderr)") }
        let db = try connection()
        let runs = try db.execute("SELECT id, extract(epoch FROM ended_at)::float8 AS ended FROM dlpipe.runs ORDER BY id").rows
        try #require(runs.count == 1, "the workers did not share one run: \(runs.count) runs (a worker started after the run ended?)")
        let ended = try #require(try runs[0].optionalDouble("ended"))
        let lags = exits.map { $0.2 - ended }
        print("exit after the run's end, per worker (s): \(lags.map { ($0 * 100).rounded() / 100 })")
        #expect(lags.allSatisfy { $0 < bound }, "a worker exited \(lags.max() ?? 0) s after the run ended (poll \(poll) s)")
        #expect(nginx.requests(matching: "/slow" + dir).count == 48)
        let sent = try db.execute(
            "SELECT count(*) AS n FROM dlpipe.run_workers WHERE run_id = $1 AND top_level IS NOT NULL",
            [.int(try runs[0].int("id"))]).rows[0].int("n")
        #expect(sent == 1, "\(sent) workers sent the top-level adds")
        #expect(try db.execute("SELECT count(*) AS n FROM dlpipe.workers WHERE run_id IS NOT NULL").rows[0].int("n") == 3)
    }

    /// `--json`'s `done` event of a worker holds its own counts (as its
    /// summary line does), its `worker` id and the `run`; the one worker that
    /// ran the job's `done` handler adds `job`, the job-wide counts the
    /// handler got: one line per run says what the whole job did.
    @Test func theDoneEventOfTheWorkerThatRanDoneCarriesTheJobsCounts() async throws {
        let urls = try files(12, size: 60_000)
        let jobFile = try job.write("job.lua", urls.map { "dl.add('\($0)')\n" }.joined()
            + "dl.on('done', function(s) dl.log('DONE ' .. s.finished) end)\n")
        let workers = try (0..<2).map { _ in try spawnWorker(jobFile, ["--settle", "1", "--json"]) }
        let outputs = await offThePool { workers.map { $0.finish() } }
        var dones: [[String: Any]] = []
        for output in outputs {
            #expect(output.status == 0, "\(output.stderr)")
            let events = output.stdout.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            let done = events.filter { $0["event"] as? String == "done" }
            #expect(done.count == 1, "\(output.stdout)")
            guard let event = done.first else { continue }
            dones.append(event)
            // The handler ran in the worker whose event has the job's counts.
            #expect(output.stderr.contains("DONE 12") == (event["job"] != nil), "\(output.stderr)")
            let own = events.filter { $0["event"] as? String == "finished" }.count
            #expect(event["finished"] as? Int == own, "its own counts: \(event)")
        }
        try #require(dones.count == 2)
        let db = try connection()
        let run = try db.execute("SELECT id FROM dlpipe.runs").rows.map { try $0.int("id") }
        try #require(run.count == 1, "the workers did not share one run")
        let ids = try db.execute("SELECT id FROM dlpipe.workers ORDER BY id").rows.map { try $0.int("id") }
        #expect(Set(dones.compactMap { ($0["worker"] as? Int).map(Int64.init) }) == Set(ids))
        #expect(dones.allSatisfy { ($0["run"] as? Int).map(Int64.init) == run[0] })
        let job = dones.compactMap { $0["job"] as? [String: Any] }
        #expect(job.count == 1, "exactly one worker tells the job's counts: \(dones)")
        #expect(job.first?["finished"] as? Int == 12 && job.first?["failed"] as? Int == 0, "\(job)")
        #expect(dones.compactMap { $0["finished"] as? Int }.reduce(0, +) == 12)
    }

    @Test func maxDownloadsCountsTheAddsOfEveryWorkerInTheRun() async throws {
        // A tree: each file's `finished` adds the next three. With two workers
        // each adding from its own handlers, a limit per worker let the run
        // queue up to twice the limit; the run's limit is the job's.
        let urls = try files(40, size: 30_000)
        let limit = 7
        let jobFile = try job.write("job.lua", """
            dl.config{ max_downloads = \(limit) }
            local urls = { \(urls.map { "'\($0)'" }.joined(separator: ", ")) }
            dl.add(urls[1])
            dl.add(urls[2])
            dl.on("finished", function(d)
              local n = tonumber(d.url:match("f(%d+)%.bin$"))
              for i = 3 * n + 3, 3 * n + 5 do
                if urls[i] then dl.add(urls[i]) end
              end
            end)
            dl.on("done", function(s) dl.log("done ran: finished " .. s.finished) end)
            """)
        let workers = [try spawnWorker(jobFile, ["--settle", "1"]), try spawnWorker(jobFile, ["--settle", "1"])]
        let results = await withTaskGroup(of: (status: Int32, stdout: String, stderr: String).self) { group in
            for worker in workers { group.addTask { await offThePool { worker.finish() } } }
            var all: [(status: Int32, stdout: String, stderr: String)] = []
            for await result in group { all.append(result) }
            return all
        }
        for result in results { #expect(result.status == 0, "\(result.stderr)") }
        #expect(nginx.requests(matching: "/slow" + dir).count == limit)
        let done = results.flatMap { $0.stderr.split(separator: "\n").filter { $0.contains("done ran:") } }
        #expect(done.count == 1 && done.first?.hasSuffix("done ran: finished \(limit)") == true, "\(done)")
        let warned = results.filter { $0.stderr.contains("max_downloads") }
        #expect(!warned.isEmpty, "no worker said why adds were dropped: \(results.map(\.stderr))")
        let queued = try connection().execute("SELECT sum(queued) AS n FROM dlpipe.runs").rows[0].int("n")
        #expect(queued == Int64(limit))
    }

    /// A worker whose top level the run's `max_downloads` refused says so
    /// under its job file's name, as a run without a queue names the add's
    /// line (it said `[] warning: ...`, naming nothing).
    @Test func aTopLevelRefusedByTheRunsLimitNamesItsJobFile() async throws {
        let urls = try files(8, size: 400_000)
        let first = try job.write("a/job.lua", "dl.config{ max_downloads = 5 }\n"
            + urls.prefix(5).map { "dl.add('\($0)')" }.joined(separator: "\n"))
        let second = try job.write("b/mirror.lua", "dl.config{ max_downloads = 5 }\n"
            + urls.suffix(3).map { "dl.add('\($0)')" }.joined(separator: "\n"))
        let one = try spawnWorker(first, ["--settle", "1"])
        // The second joins the run once the first queued its five (4 s each
        // at 100 KB/s, two at a time: the run lasts about 12 s, so that a
        // loaded machine's slow start of the second still finds it open).
        let deadline = Date().addingTimeInterval(60)
        // (No schema yet before the first worker made it.)
        func queued() -> Int64 {
            (try? connection().execute("SELECT coalesce(sum(queued), 0) AS n FROM dlpipe.runs WHERE ended_at IS NULL").rows[0].int("n")) ?? 0
        }
        while queued() < 5 {
            try #require(Date() < deadline, "the first worker never queued its top level")
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        let two = try spawnWorker(second, ["--settle", "1"])
        let results = await offThePool { [one.finish(), two.finish()] }
        #expect(results.map(\.status) == [0, 0], "\(results.map(\.stderr))")
        let warning = results[1].stderr.split(separator: "\n").filter { $0.contains("were not queued") }
        #expect(warning.count == 1 && warning[0].hasPrefix("[\(second)] warning: 3 of the downloads added at load were not queued"), "\(results[1].stderr)")
    }
}
