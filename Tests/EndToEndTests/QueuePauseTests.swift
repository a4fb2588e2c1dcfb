@testable import DLPipe
@testable import DLPipeQueue
import Foundation
import Testing
import TestSupport

/// A download a handler pauses in a worker of a shared queue. Its row had
/// stayed running, so the run never ended: the worker waited for ever and
/// `done` never ran. Now it behaves as without a queue: `done` runs once,
/// the paused download then fails "paused and never resumed", and the
/// run's exit code counts it; one that a later handler resumes goes on.
/// Every worker here is killed by its watchdog after 180 s, so a hang fails
/// (not sooner: at the start of a full suite on two cores a worker took up
/// to 114 s to start, QueueOutageTests).
@Suite struct QueuePauseTests: QueueRunSuite {
    let fixture: QueueRunFixture

    init() throws {
        fixture = try QueueRunFixture(label: "pause", hosts: ["pause.queue.test"])
    }

    private func worker(_ jobFile: String, name: String, _ extra: [String] = []) throws -> Subprocess {
        try Subprocess(
            Paths.binary,
            ["run", jobFile, "-d", out, "--queue", queue, "--name", name, "--settle", "1", "-j", "2"] + extra + resolving,
            environment: ["NO_COLOR": "1"], timeout: 180)
    }

    /// `count` files of 1,000 seeded bytes, `PREFIXN.bin` in the test's
    /// folder on nginx, and their plain-http URLs.
    private func smallFiles(_ prefix: String, count: Int, seed: UInt64) throws -> [String] {
        try (0..<count).map { index in
            let path = dir + "/\(prefix)\(index).bin"
            _ = try nginx.put(path, randomBytes: 1_000, seed: seed + UInt64(index))
            return nginx.url(path, host: hosts[0], tls: false)
        }
    }


    @Test(arguments: [1, 2])
    func aDownloadPausedAndNeverResumedLetsTheRunEnd(workers: Int) async throws {
        // 300 KB at 100 KiB/s: still transferring when its first progress comes.
        let slow = try fixture.slowFile("paused.bin", size: 300_000, seed: 3, hostIndex: 0)
        let quick = try smallFiles("quick", count: 4, seed: 10)
        let jobFile = try job.write("job.lua", """
            local slow = dl.add('\(slow.url)')
            \(quick.map { "dl.add('\($0)')" }.joined(separator: "\n"))
            local paused = false
            dl.on("progress", function(d, p)
              if d.id == slow and p.bytes > 0 and not paused then paused = true; dl.pause(d.id) end
            end)
            dl.on("done", function(s) dl.log("done: finished " .. s.finished .. ", failed " .. s.failed) end)
            """)
        let name = "paused-\(workers)"
        let started = try (0..<workers).map { _ in try worker(jobFile, name: name) }
        let ended = await offThePool { started.map { $0.finish() } }
        let stderr = ended.map(\.stderr).joined(separator: "\n")
        // The run's code for every worker: the paused download failed.
        #expect(ended.map(\.status) == Array(repeating: 1, count: workers), "\(stderr)")
        #expect(stderr.components(separatedBy: "done: finished 4, failed 0").count == 2, "done ran once: \(stderr)")
        #expect(stderr.components(separatedBy: "paused and never resumed").count == 2, "\(stderr)")
        #expect(listing(out).filter { !$0.hasPrefix(".") }.sorted() == (0..<4).map { "quick\($0).bin" })
        #expect(partFiles(under: out).isEmpty)
        #expect(try statuses(name) == ["finished": 4, "failed": 1])
    }

    /// Paused while nothing else runs (its row is marked paused, and the run
    /// goes idle), then resumed by a handler of a download that `done` adds:
    /// it goes back to the queue and is fetched whole.
    @Test func aParkedDownloadResumedLaterIsFetched() async throws {
        let slow = try fixture.slowFile("parked.bin", size: 300_000, seed: 4, hostIndex: 0)
        let laterPath = dir + "/later.bin"
        let later = try nginx.put(laterPath, randomBytes: 2_000, seed: 5)
        let jobFile = try job.write("job.lua", """
            local slow = dl.add('\(slow.url)')
            local paused, added = false, false
            dl.on("progress", function(d, p)
              if d.id == slow and p.bytes > 0 and not paused then paused = true; dl.pause(d.id) end
            end)
            dl.on("finished", function(d) if d.url:match("later%.bin$") then dl.resume(slow) end end)
            dl.on("done", function(s)
              dl.log("done: finished " .. s.finished)
              if not added then added = true; dl.add('\(nginx.url(laterPath, host: hosts[0], tls: false))') end
            end)
            """)
        let run = await offThePool { [self] in try? worker(jobFile, name: "parked").finish() }
        let stderr = run?.stderr ?? ""
        #expect(run?.status == 0, "\(stderr)")
        #expect(stderr.contains("done: finished 0") && stderr.contains("done: finished 2"), "\(stderr)")
        #expect(sameBytes(out + "/parked.bin", slow.bytes))
        #expect(sameBytes(out + "/later.bin", later))
        #expect(partFiles(under: out).isEmpty)
        #expect(try statuses("parked") == ["finished": 2])
    }

    /// Paused in `response`, resumed by `done` itself: the look after `done`
    /// had run before the resume was reported, found the run idle and ended
    /// it (exit 1, nothing failed), and the row stayed ready past its run.
    @Test func aDownloadDoneResumesIsFetchedInTheSameRun() async throws {
        let slow = try fixture.slowFile("resumed.bin", size: 300_000, seed: 6, hostIndex: 0)
        let jobFile = try job.write("job.lua", """
            local slow = dl.add('\(slow.url)')
            dl.on("response", function(d) if d.id == slow and d.attempt == 1 then dl.pause(d.id) end end)
            dl.on("done", function(s) dl.log("done: finished " .. s.finished); dl.resume(slow) end)
            """)
        let run = await offThePool { [self] in try? worker(jobFile, name: "done-resumed").finish() }
        let stderr = run?.stderr ?? ""
        #expect(run?.status == 0, "\(stderr)")
        #expect(stderr.contains("done: finished 0") && stderr.contains("done: finished 1"), "\(stderr)")
        #expect(sameBytes(out + "/resumed.bin", slow.bytes))
        #expect(partFiles(under: out).isEmpty)
        #expect(try statuses("done-resumed") == ["finished": 1])
    }

    /// A `--follow` worker keeps a paused download past its run's end. Its
    /// run counted it as failed (exit 1, "0 failed"), and when the worker
    /// stopped, the take-back made the row ready under the ended run: the
    /// next run fetched it, though its top level did not add it.
    @Test func aFollowWorkersPausedDownloadEndsWithItsRun() async throws {
        let slow = try fixture.slowFile("kept.bin", size: 300_000, seed: 7, hostIndex: 0)
        let quick = try smallFiles("set", count: 2, seed: 20)
        let jobFile = try job.write("job.lua", """
            if dl.var.set == "0" then dl.add('\(slow.url)') end
            dl.add(({ ['0'] = '\(quick[0])', ['1'] = '\(quick[1])' })[dl.var.set])
            dl.on("progress", function(d, p)
              if d.url:match("kept%.bin$") and p.bytes > 0 then dl.pause(d.id) end
            end)
            """)
        let follower = try worker(jobFile, name: "follow-kept", ["--follow", "--json", "--var", "set=0"])
        let done = await offThePool { () -> String? in
            while let line = follower.readStdoutLine() {
                if line.contains("\"event\":\"done\"") { return line }
            }
            return nil
        }
        let event = try #require(done.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] })
        // Nothing failed in the run: the follower keeps its paused download.
        #expect(event["exit_code"] as? Int == 0, "\(event)")
        #expect(try statuses("follow-kept") == ["finished": 1, "paused": 1])
        // A cron run of the same top level adds the kept URL again: it is
        // left to the follower (a re-queue made it ready under its claim
        // token, which the table refuses: the worker died with exit 4).
        let again = await offThePool { [self] in try? worker(jobFile, name: "follow-kept", ["--var", "set=0"]).finish() }
        #expect(again?.status == 0, "\(again?.stderr ?? "")")
        #expect(try statuses("follow-kept") == ["finished": 1, "paused": 1])
        follower.signal(SIGTERM)
        let stopped = await offThePool { follower.finish() }
        #expect(stopped.status == 130, "\(stopped.stderr)")
        #expect(try statuses("follow-kept") == ["finished": 1, "cancelled": 1])
        let next = await offThePool { [self] in try? worker(jobFile, name: "follow-kept", ["--var", "set=1"]).finish() }
        #expect(next?.status == 0, "\(next?.stderr ?? "")")
        #expect(next?.stderr.contains("1 finished") == true, "\(next?.stderr ?? "")")
        #expect(!FileManager.default.fileExists(atPath: out + "/kept.bin"), "the next run fetched the ended run's download")
        #expect(listing(out).filter { !$0.hasPrefix(".") }.sorted() == ["set0.bin", "set1.bin"])
        #expect(try statuses("follow-kept") == ["finished": 2, "cancelled": 1])
    }

    /// A control that reaches no download (here one that ended) says so in a
    /// worker: it did nothing silently. Without a queue it stays silent, as
    /// documented for a download that ended.
    @Test func aControlThatReachesNothingWarnsInAWorker() async throws {
        let path = dir + "/one.bin"
        _ = try nginx.put(path, randomBytes: 1_000, seed: 30)
        let jobFile = try job.write("job.lua", """
            local one = dl.add('\(nginx.url(path, host: hosts[0], tls: false))')
            dl.on("done", function() dl.resume(one); dl.pause(one); dl.cancel(one) end)
            """)
        let run = await offThePool { [self] in try? worker(jobFile, name: "untouched").finish() }
        let stderr = run?.stderr ?? ""
        #expect(run?.status == 0, "\(stderr)")
        for verb in ["resume", "pause"] {
            #expect(stderr.contains("job.lua:2] warning: dl.\(verb)(-1): nothing done: no worker runs it now (it waits in the queue or in a worker's claims held ahead, or it ended)"), "\(stderr)")
        }
        #expect(stderr.contains("warning: dl.cancel(-1): nothing done: no worker runs it now (it ended, or its worker died and the queue has not taken it back yet)"), "\(stderr)")
        let alone = await offThePool { [self] in
            try? Subprocess(Paths.binary, ["run", jobFile, "-d", out + "-alone"] + resolving, environment: ["NO_COLOR": "1"], timeout: 180).finish()
        }
        #expect(alone?.status == 0)
        #expect(alone?.stderr.contains("warning") == false, "\(alone?.stderr ?? "")")
    }

    /// A worker killed while it holds a paused download: the other worker
    /// had ended the run at once (the paused row was no work of the run's),
    /// exit 1 with "0 failed", and the row never went back to ready. Now
    /// the run waits for the holder's next heartbeat, which a dead worker
    /// never sends: its lease runs out, the download goes back to ready,
    /// and the other worker fetches it in the same run.
    ///
    /// The test holds the lease's clock: the holder's lease is long, so the
    /// other worker joins the run while it holds however slowly it starts,
    /// and the test then ends the lease in the database, as its running out
    /// would. (With a 10 s lease the other worker had to start within it:
    /// under load or ThreadSanitizer it did not, started a fresh run and
    /// exited 1.)
    @Test func aDownloadPausedInAKilledWorkerIsFetchedOnceItsLeaseRunsOut() async throws {
        let slow = try fixture.slowFile("orphan.bin", size: 300_000, seed: 8, hostIndex: 0)
        let jobFile = try job.write("job.lua", """
            local slow = dl.add('\(slow.url)')
            dl.on("response", function(d)
              if d.id == slow and dl.var.pause == "1" then dl.pause(d.id); dl.log("paused it") end
            end)
            """)
        // Its settle time is long: it must not end the run itself first.
        let holder = try worker(jobFile, name: "orphan", ["--lease", "600", "--settle", "30", "--var", "pause=1"])
        let pausedIt = await offThePool { () -> Bool in
            while let line = holder.readStderrLine() {
                if line.contains("paused it") { return true }
            }
            return false
        }
        try #require(pausedIt)
        // Killed once its row shows paused (before, the row was still
        // running, and the run waited for the lease anyway).
        _ = try pollUntil(seconds: 60) { () throws -> Bool? in try statuses("orphan")["paused"] == 1 ? true : nil }
        holder.signal(SIGKILL)
        _ = await offThePool { holder.finish() }
        let second = try worker(jobFile, name: "orphan", ["--lease", "10"])
        // Both in the run: the dead holder (its lease holds) and the other.
        _ = try pollUntil(seconds: 180) { () throws -> Bool? in try workersInRun("orphan") == 2 ? true : nil }
        try endLease(ofWorkerWithPID: holder.pid)
        let other = await offThePool { second.finish() }
        #expect(other.status == 0, "\(other.stderr)")
        #expect(sameBytes(out + "/orphan.bin", slow.bytes))
        #expect(try statuses("orphan") == ["finished": 1])
    }

    /// Workers of job `name` not stopped that joined its open run.
    private func workersInRun(_ name: String) throws -> Int64 {
        try PostgresConnection(PostgresAddress(queue)).execute(
            """
            SELECT count(*) AS n FROM dlpipe.workers w JOIN dlpipe.jobs j ON j.id = w.job_id
            JOIN dlpipe.runs r ON r.id = w.run_id
            WHERE j.name = $1 AND w.stopped_at IS NULL AND r.ended_at IS NULL
            """, [.text(name)]
        ).rows[0].int("n")
    }

    /// Ends the lease of the worker whose process was `pid`, as its running
    /// out without a heartbeat would.
    private func endLease(ofWorkerWithPID pid: pid_t) throws {
        try PostgresConnection(PostgresAddress(queue)).execute(
            "UPDATE dlpipe.workers SET lease_until = now() - interval '1 second' WHERE pid = $1 AND stopped_at IS NULL",
            [.int(Int64(pid))])
    }
}
