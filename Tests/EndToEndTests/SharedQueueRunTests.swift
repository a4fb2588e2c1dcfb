@testable import DLPipe
@testable import DLPipeQueue
import Foundation
import Testing
import TestSupport

/// Several `dlpipe run --queue` worker processes share one job through a real
/// PostgreSQL (issue 11): every file whole and fetched once, per-host limits
/// across all workers, `done` once per run with the job-wide counts.
@Suite struct SharedQueueRunTests: QueueRunSuite {
    let fixture: QueueRunFixture

    init() throws {
        // Three host names, all nginx on 127.0.0.1 (dlpipe counts hosts by name).
        fixture = try QueueRunFixture(label: "shared", hosts: ["a.queue.test", "b.queue.test", "c.queue.test"])
    }

    /// `count` files spread over the hosts; their URLs and bytes by name.
    private func files(_ count: Int, size: Int) throws -> [(name: String, url: String, bytes: [UInt8])] {
        try (0..<count).map { index in
            try fixture.slowFile("f\(index).bin", size: size + index, seed: UInt64(index + 1), hostIndex: index)
        }
    }

    private func worker(_ jobFile: String, _ extra: [String] = []) async throws -> DLPipeRun {
        try await DLPipeRun.run(
            ["run", jobFile, "-d", out, "--queue", queue, "--name", "mirror", "--settle", "1", "-j", "4", "--per-host", "2"]
                + resolving + extra)
    }


    /// Every file of `files` whole under its own name, nothing else, no part file left.
    private func expectWholeAndAlone(_ files: [(name: String, url: String, bytes: [UInt8])]) {
        #expect(listing(out) == files.map(\.name).sorted(), "numbered copies or strays: \(listing(out).filter { !$0.hasPrefix("f") || $0.contains(".part") || $0.split(separator: ".").count > 2 })")
        let broken = files.filter { !sameBytes(out + "/" + $0.name, $0.bytes) }.map(\.name)
        #expect(broken.isEmpty, "not whole: \(broken)")
        let parts = partFiles(under: out)
        #expect(parts.isEmpty, "part files left: \(parts)")
    }

    @Test func threeWorkersShareOneJobOverThreeHosts() async throws {
        // 210 files from nginx's /slow/ (100 KB/s), so each transfer lasts
        // about a tenth of a second and the workers' claims overlap; --per-host 2.
        let files = try files(210, size: 12_000)
        let jobFile = try job.write("job.lua", files.enumerated().map { "dl.add{ url = '\($1.url)', meta = { n = \($0) } }\n" }.joined() + """
            dl.on("finished", function(d)
              -- Added by whichever worker ran the top level first: the meta comes with the queued request.
              if d.meta and d.meta.n then dl.log("meta came: " .. d.meta.n) end
            end)
            dl.on("done", function(s)
              dl.log("done ran: finished " .. s.finished .. ", failed " .. s.failed)
            end)
            """)
        let runs = try await withThrowingTaskGroup(of: DLPipeRun.self) { group in
            for _ in 0..<3 { group.addTask { try await worker(jobFile) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for run in runs { #expect(run.status == 0, "\(run.stderr)") }
        let metaLines = runs.flatMap { $0.stderr.split(separator: "\n").filter { $0.contains("meta came: ") } }
        #expect(metaLines.count == 210, "d.meta of top-level adds seen \(metaLines.count) times")
        let doneLines = runs.flatMap { $0.stderr.split(separator: "\n").filter { $0.contains("done ran:") } }
        #expect(doneLines.count == 1, "done ran \(doneLines.count) times")
        #expect(doneLines.first?.hasSuffix("done ran: finished 210, failed 0") == true, "\(doneLines)")
        let served = nginx.requests(matching: "/slow" + dir)
        #expect(served.count == 210, "served \(served.count) requests for 210 files")
        #expect(Set(served.map(\.uri)).count == 210)
        for host in hosts {
            let peakHere = Nginx.peak(served.filter { $0.host == host })
            #expect(peakHere <= 2, "\(host) served \(peakHere) at once under --per-host 2")
        }
        expectWholeAndAlone(files)
        // The work was shared: each worker's summary counts its own files.
        let perWorker = runs.map { run in run.stderr.split(separator: "\n").filter { $0.hasPrefix("finished ") }.count }
        #expect(perWorker.reduce(0, +) == 210, "\(perWorker)")
    }

    /// Starts a worker whose output the test reads at the end.
    private func spawnWorker(_ jobFile: String, _ extra: [String] = [], queue: String? = nil) throws -> Subprocess {
        try .queueWorker(
            ["run", jobFile, "-d", out, "--queue", queue ?? self.queue, "--name", "mirror", "--settle", "1", "-j", "4", "--per-host", "2"]
                + resolving + extra)
    }

    @Test func killedWorkersLoseNothingAndDoubleNothing() async throws {
        // 120 files of 40 KB at 100 KB/s: 0.4 s each, so kills land in the
        // middle of transfers, and the run (about 8 s on 6 host slots) outlasts
        // the kills; a lease of 2 s for quick take-overs.
        let files = try files(120, size: 40_000)
        let jobFile = try job.write("job.lua", files.map { "dl.add('\($0.url)')\n" }.joined())
        let extra = ["--lease", "2"]
        let spawn = { @Sendable in try? spawnWorker(jobFile, extra) }
        let (killed, survivors) = await offThePool { () -> ([Int32], [(status: Int32, stdout: String, stderr: String)]) in
            var workers = (0..<3).compactMap { _ in spawn() }
            var killedStatus: [Int32] = []
            var random = SplitMix64(seed: UInt64(UInt32(truncatingIfNeeded: time(nil))))
            for round in 0..<3 where !workers.isEmpty {
                // A random moment of the run: between 0.3 and 1.0 s after the last kill.
                usleep(300_000 + UInt32(random.next() % 700_000))
                let victim = workers.remove(at: round % workers.count)
                victim.signal(SIGKILL)
                killedStatus.append(victim.waitForExit())
                if let replacement = spawn() { workers.append(replacement) }
            }
            return (killedStatus, workers.map { $0.finish() })
        }
        #expect(survivors.count == 3, "a worker could not be started")
        #expect(killed.allSatisfy { $0 == 128 + SIGKILL }, "\(killed)")
        for run in survivors { #expect(run.status == 0, "\(run.stderr)") }
        expectWholeAndAlone(files)
        // How long the dead workers' claims waited before another worker took
        // them: reported, not asserted (it depends on the lease and the load).
        let connection = try PostgresConnection(PostgresAddress(queue))
        let rows = try connection.execute(
            """
            SELECT extract(epoch FROM stopped_at - heartbeat_at)::float8 AS waited FROM dlpipe.workers
            WHERE stop_reason = 'lease expired' ORDER BY id
            """).rows
        let waits = try rows.map { try $0.double("waited") }
        // A worker killed near the end may outlive the run (nobody is left to
        // declare it dead); the first one cannot.
        #expect(!waits.isEmpty && waits.count <= 3, "killed workers declared dead: \(waits)")
        print("kill -9 take-over, seconds from the last heartbeat to the claims going back: \(waits.map { ($0 * 10).rounded() / 10 })")
    }

    /// Whether the queue declared worker `pid` dead (its lease ran out).
    private func declaredDead(pid: pid_t, on given: PostgresConnection? = nil) throws -> Bool {
        let connection = try given ?? PostgresConnection(PostgresAddress(queue))
        return !(try connection.execute(
            "SELECT 1 FROM dlpipe.workers WHERE pid = $1 AND stopped_at IS NOT NULL", [.int(Int64(pid))]
        ).rows.isEmpty)
    }

    @Test func aWorkerFrozenPastItsLeasePlacesNothingWhenItWakes() async throws {
        // Two workers, a lease of 2 s; one is frozen (SIGSTOP) in the middle of
        // its transfers until the queue declares it dead and the other took
        // its downloads, then woken (SIGCONT).
        // 20 files of 60 to 345 KB at 100 KB/s: 0.6 to 3.5 s each, ending one
        // by one, so the worker frozen after its first file holds transfers
        // in flight (files of one size ended together, and a worker frozen
        // right after them held nothing).
        let files = try (0..<20).map { index in
            try fixture.slowFile("f\(index).bin", size: 60_000 + index * 15_000, seed: UInt64(index + 1), hostIndex: index)
        }
        let jobFile = try job.write("job.lua", files.map { "dl.add('\($0.url)')\n" }.joined())
        let extra = ["--lease", "2"]
        let frozen = try spawnWorker(jobFile, extra)
        let other = try spawnWorker(jobFile, extra)
        let (sawFinished, declared) = await offThePool { () -> (Bool, Bool) in
            // Frozen once it finished a file: its next ones are in flight.
            var finished = 0
            while finished < 1, let line = frozen.readStderrLine() {
                if line.hasPrefix("finished ") { finished += 1 }
            }
            frozen.signal(SIGSTOP)
            // Until the other worker declares it dead (at most 60 s: a loaded
            // full run once took longer than 30), asked on one connection.
            let deadline = Date().addingTimeInterval(60)
            var declared = false
            let connection = try? PostgresConnection(PostgresAddress(queue))
            while !declared && Date() < deadline {
                declared = (try? connection.map { try declaredDead(pid: frozen.pid, on: $0) } ?? declaredDead(pid: frozen.pid)) ?? false
                if !declared { usleep(100_000) }
            }
            frozen.signal(SIGCONT)
            return (finished == 1, declared)
        }
        #expect(sawFinished)
        #expect(declared, "the frozen worker was never declared dead")
        let (woken, survivor) = await offThePool { (frozen.finish(), other.finish()) }
        #expect(survivor.status == 0, "\(survivor.stderr)")
        #expect(woken.status == 4, "\(woken.stderr)")
        #expect(woken.stderr.contains("this worker lost its lease"), "\(woken.stderr)")
        // It says why and what it did: frozen, not cut off from the database.
        #expect(woken.stderr.contains("it was stopped or frozen") && woken.stderr.contains("longer than its lease (--lease 2.0 s)"), "\(woken.stderr)")
        #expect(woken.stderr.contains("keeps none it cannot place safely") && woken.stderr.contains("(exit 4)"), "\(woken.stderr)")
        expectWholeAndAlone(files)
        #expect(Set(nginx.requests(matching: "/slow" + dir).map(\.uri)).count == 20)
    }

    @Test func aDatabaseRestartInTheMiddleOfARunLosesNothing() async throws {
        // A cluster of this test's own: a restart cuts every connection.
        let cluster = try PostgresCluster.ownCluster()
        defer { cluster.stop() }
        let url = try cluster.freshDatabase("restart")
        let files = try files(60, size: 40_000)
        let jobFile = try job.write("job.lua", files.map { "dl.add('\($0.url)')\n" }.joined())
        let first = try spawnWorker(jobFile, queue: url)
        let second = try spawnWorker(jobFile, queue: url)
        let restarted = await offThePool { () -> String? in
            // Restarted once the run is under way: transfers are in flight.
            var finished = 0
            while finished < 5, let line = first.readStderrLine() {
                if line.hasPrefix("finished ") { finished += 1 }
            }
            do {
                try cluster.restart()
                return nil
            } catch {
                return "\(error)"
            }
        }
        #expect(restarted == nil, "pg_ctl restart: \(restarted ?? "")")
        let runs = await offThePool { [first.finish(), second.finish()] }
        for run in runs { #expect(run.status == 0, "\(run.stderr)") }
        expectWholeAndAlone(files)
        // Nothing was fetched twice: a claim whose answer the restart lost went
        // back to ready before anyone started it.
        #expect(nginx.requests(matching: "/slow" + dir).count == 60)
    }

    /// Which worker finished which file: the names each worker's lines name.
    private func finishedNames(_ run: (status: Int32, stdout: String, stderr: String)) -> Set<String> {
        Set(run.stderr.split(separator: "\n").filter { $0.hasPrefix("finished ") || $0.hasPrefix("unchanged ") }.compactMap { line in
            line.split(separator: " ").dropFirst().first.map { String($0.split(separator: "/").last ?? "") }
        })
    }

    @Test func chainedAddsGoToAnyWorkerAndAReRunByOthersIsConditional() async throws {
        // Three index pages, each listing ten files; the job adds the pages,
        // and its `finished` handler adds what a page lists.
        var children: [String: [String]] = [:]
        var all: [(name: String, url: String, bytes: [UInt8])] = []
        for page in 0..<3 {
            let listed = try (0..<10).map { index in
                let file = try fixture.slowFile("p\(page)-\(index).bin", size: 20_000 + index, seed: UInt64(page * 100 + index + 1), hostIndex: index)
                all.append(file)
                return file.url
            }
            let name = "index\(page).txt"
            let bytes = try nginx.put(dir + "/" + name, bytes: Array(listed.joined(separator: "\n").utf8))
            all.append((name, nginx.url(dir + "/" + name, host: hosts[page], tls: false), bytes))
            children[name] = listed.map { String($0.split(separator: "/").last!) }
        }
        let pages = all.filter { $0.name.hasSuffix(".txt") }
        let jobFile = try job.write("job.lua", pages.map { "dl.add('\($0.url)')\n" }.joined() + """
            dl.on("finished", function(d, f)
              dl.log("depth of " .. f.path:match("[^/]+$") .. ": " .. d.depth)
              if f.path:match("%.txt$") then
                for url in dl.read(f.path):gmatch("[^\\n]+") do dl.add(url) end
              end
            end)
            """)
        let first = await offThePool { () -> [(status: Int32, stdout: String, stderr: String)] in
            let workers = (0..<2).compactMap { _ in try? spawnWorker(jobFile) }
            return workers.map { $0.finish() }
        }
        try #require(first.count == 2)
        for run in first { #expect(run.status == 0, "\(run.stderr)") }
        expectWholeAndAlone(all)
        #expect(nginx.requests(matching: "/slow" + dir).count == 30, "each listed file fetched once")
        // Some file went to the worker that did not fetch the page listing it.
        let fetched = first.map(finishedNames)
        let crossed = children.contains { page, names in
            let pageWorker = fetched.firstIndex { $0.contains(page) }
            return names.contains { name in fetched.firstIndex { $0.contains(name) } != pageWorker }
        }
        #expect(crossed, "every listed file was fetched by its page's worker: \(fetched)")
        // d.depth is the add's, whichever worker runs the download: 0 for the
        // pages, 1 for the files they list.
        let depths = first.flatMap { $0.stderr.split(separator: "\n").filter { $0.contains("depth of ") } }
        #expect(depths.count == 33, "\(depths)")
        let wrong = depths.filter { line in line.contains(".txt: ") ? !line.hasSuffix(".txt: 0") : !line.hasSuffix(": 1") }
        #expect(wrong.isEmpty, "\(wrong)")
        // A re-run by two other worker processes: everything asked
        // conditionally (304), every file kept as it is.
        // Pages under DIR/, listed files under /slow/DIR/.
        let pagesBefore = nginx.requests(matching: dir).count
        let listedBefore = nginx.requests(matching: "/slow" + dir).count
        let second = await offThePool { () -> [(status: Int32, stdout: String, stderr: String)] in
            let workers = (0..<2).compactMap { _ in try? spawnWorker(jobFile) }
            return workers.map { $0.finish() }
        }
        try #require(second.count == 2)
        for run in second { #expect(run.status == 0, "\(run.stderr)") }
        let rerun = Array(nginx.requests(matching: dir).dropFirst(pagesBefore))
            + Array(nginx.requests(matching: "/slow" + dir).dropFirst(listedBefore))
        #expect(rerun.count == 33, "the re-run asked for every file once: \(rerun.count)")
        #expect(rerun.allSatisfy { $0.status == 304 }, "not conditional: \(rerun.filter { $0.status != 304 }.map(\.uri))")
        expectWholeAndAlone(all)
    }

    /// Whether every run of the queue's jobs has ended (and there was one).
    private func runsEnded() throws -> Bool {
        let connection = try PostgresConnection(PostgresAddress(queue))
        let row = try connection.execute(
            "SELECT count(*) AS runs, count(*) FILTER (WHERE ended_at IS NULL) AS open FROM dlpipe.runs").rows[0]
        return try row.int("runs") > 0 && row.int("open") == 0
    }

    @Test func aFollowingWorkerOutlivesItsRunAndTakesTheNextOnesWork() async throws {
        let first = try files(4, size: 5_000)
        let firstJob = try job.write("first.lua", first.map { "dl.add('\($0.url)')\n" }.joined())
        let follower = try spawnWorker(firstJob, ["--follow", "--settle", "0.5"])
        // Until its run ended (at most 20 s): the follower is still there.
        let ended = await offThePool { () -> Bool in
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                if (try? runsEnded()) == true { return true }
                usleep(100_000)
            }
            return false
        }
        #expect(ended, "the first run never ended")
        #expect(kill(follower.pid, 0) == 0, "the --follow worker exited when its run ended")
        // Another worker starts the next run with more work; the follower may take some.
        let more = try (10..<18).map { index in
            try fixture.slowFile("m\(index).bin", size: 40_000, seed: UInt64(index), hostIndex: index)
        }
        let moreJob = try job.write("more.lua", more.map { "dl.add('\($0.url)')\n" }.joined())
        let second = try await worker(moreJob)
        #expect(second.status == 0, "\(second.stderr)")
        follower.signal(SIGTERM)
        let stopped = await offThePool { follower.finish() }
        #expect(stopped.status == 130, "\(stopped.stderr)")
        expectWholeAndAlone(first + more)
        #expect(nginx.requests(matching: "/slow" + dir).count == 12)
    }
}

/// Retries in queue mode: the backoff waits in the database (the row is ready
/// again with a `run_at`), not inside one worker's claim, and the retry budget
/// counts every worker's attempts.
@Suite struct SharedQueueRetryTests: ServerJobSuite {
    let fixture: ServerJobFixture
    let queue: String

    init() throws {
        fixture = try ServerJobFixture(label: "retry-out")
        queue = try PostgresCluster.shared().freshDatabase("retry")
    }

    private func spawnWorker(_ jobFile: String, _ extra: [String] = []) throws -> Subprocess {
        try .queueWorker(["run", jobFile, "-d", out, "--queue", queue, "--name", "retries", "--settle", "1"] + extra)
    }

    /// The row of the job's one download.
    private func row(on given: PostgresConnection? = nil) throws -> PostgresRow {
        let connection = try given ?? PostgresConnection(PostgresAddress(queue))
        return try connection.execute(
            """
            SELECT status, attempts, worker_id, run_at > now() AS later, last_error FROM dlpipe.downloads
            """).rows[0]
    }

    @Test func aRetryWaitsInTheQueueWhereAnyWorkerCanTakeIt() async throws {
        let bytes = try server.put("r.bin", randomBytes: 30_000)
        // The first answer is a 503 asking for 300 s: the row waits in the
        // queue until this test has seen it and moves its time to now.
        let jobFile = try job.write("job.lua", "dl.add('\(server.url("/files/r.bin?fail_times=1&retry_after=300"))')\n")
        let first = try spawnWorker(jobFile)
        let sawRetrying = await offThePool { () -> Bool in
            while let line = first.readStderrLine() { if line.hasPrefix("retrying ") { return true } }
            return false
        }
        #expect(sawRetrying)
        // While the backoff runs, the download is ready in the database with
        // its time to come, held by no worker, and its error kept.
        // (Asked every 50 ms on one connection for at most 30 s: the report
        // follows the event.)
        let (waiting, seen) = await offThePool { () -> (PostgresRow?, String) in
            let deadline = Date().addingTimeInterval(30)
            let connection = try? PostgresConnection(PostgresAddress(queue))
            var seen = ""
            while Date() < deadline {
                do {
                    let row = try row(on: connection)
                    seen = try row.text("status")
                    if seen == "ready" { return (row, seen) }
                } catch {
                    seen = "\(error)"
                }
                usleep(50_000)
            }
            return (nil, seen)
        }
        let ready = try #require(waiting, "the download never went back to ready in the queue (last seen: \(seen))")
        #expect(try ready.optionalInt("worker_id") == nil)
        #expect(try ready.bool("later"))
        let lastError = try ready.optionalText("last_error") ?? ""
        #expect(lastError.contains("503"), "\(lastError)")
        // A second worker joins; the retry comes due, and one of them takes it.
        let second = try spawnWorker(jobFile)
        // (The Retry-After holds the host back for every worker too.)
        let moving = try PostgresConnection(PostgresAddress(queue))
        _ = try moving.execute("UPDATE dlpipe.hosts SET next_at = now()")
        _ = try moving.execute("UPDATE dlpipe.downloads SET run_at = now()")
        let runs = await offThePool { [first.finish(), second.finish()] }
        for run in runs { #expect(run.status == 0, "\(run.stderr)") }
        #expect(sameBytes(out + "/r.bin", bytes))
        let done = try row()
        #expect(try done.text("status") == "finished")
        #expect(try done.int("attempts") == 2)
        #expect(try server.requests(matching: "/files/r.bin").count == 2)
    }

    @Test func aWorkerWhoseOwnDownloadsAllSucceededSaysWhyItExitsOne() async throws {
        _ = try server.put("ok.bin", randomBytes: 1_000)
        // One download fails for good (404); two workers: whichever did not
        // run it exits 1 too, and says why.
        let jobFile = try job.write("job.lua", """
            dl.add('\(server.url("/files/missing.bin"))')
            dl.add('\(server.url("/files/ok.bin"))')
            """)
        let runs = await offThePool { () -> [(status: Int32, stdout: String, stderr: String)] in
            let workers = (0..<2).compactMap { _ in try? spawnWorker(jobFile) }
            return workers.map { $0.finish() }
        }
        #expect(runs.count == 2)
        for run in runs {
            #expect(run.status == 1, "\(run.stderr)")
            let failedHere = run.stderr.split(separator: "\n").contains { $0.hasPrefix("failed ") }
            let explained = run.stderr.contains("exit 1 is the job's run's, for every worker: nothing failed here")
            #expect(failedHere != explained, "\(run.stderr)")
        }
    }

    @Test func theRetryBudgetCountsTheAttemptsOfEveryClaim() async throws {
        _ = try server.put("down.bin", randomBytes: 1_000)
        // Always 503, no Retry-After: the policy's own backoff; one retry allowed.
        let jobFile = try job.write("job.lua", "dl.add('\(server.url("/files/down.bin?status=503"))')\n")
        let run = await offThePool { try? spawnWorker(jobFile, ["--retries", "1"]).finish() }
        #expect(run?.status == 1, "\(run?.stderr ?? "no worker")")
        #expect(run?.stderr.contains("failed ") == true, "\(run?.stderr ?? "")")
        // Two attempts in all: the retry's claim went on from the first.
        #expect(try server.requests(matching: "/files/down.bin").count == 2)
        let failed = try row()
        #expect(try failed.text("status") == "failed")
        #expect(try failed.int("attempts") == 2)
    }
}
