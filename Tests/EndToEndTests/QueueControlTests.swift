@testable import DLPipe
@testable import DLPipeQueue
import Foundation
import Testing
import TestSupport

/// `dlpipe queue`, the control plane of a shared job, against live workers:
/// every failure of a run with filters, the run history with each worker's
/// counts, purge, pause and resume, stop. Conditions are waited on as rows
/// of the queue or lines of output (`pollUntil`, `waitForLine`); every
/// process has a watchdog, so a hang fails the test.
@Suite struct QueueControlTests: QueueRunSuite {
    let fixture: QueueRunFixture

    init() throws {
        fixture = try QueueRunFixture(label: "control", hosts: ["a.control.test", "b.control.test"])
    }

    func worker(_ jobFile: String, name: String, _ extra: [String] = []) throws -> Subprocess {
        try Subprocess.queueWorker(
            ["run", jobFile, "-d", out, "--queue", queue, "--name", name, "--settle", "0", "--lease", "3"] + extra + resolving)
    }

    /// `dlpipe queue ARGUMENTS --queue URL --name NAME`, to its end.
    func control(_ arguments: [String], name: String) async -> (status: Int32, stdout: String, stderr: String) {
        let all = ["queue"] + arguments + ["--queue", queue, "--name", name]
        return await offThePool {
            guard let process = try? Subprocess(Paths.binary, all, environment: ["NO_COLOR": "1"], timeout: 60) else {
                return (-1, "", "cannot start dlpipe")
            }
            return process.finish()
        }
    }

    func json(_ text: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(text.utf8))
    }

    func scalar(_ sql: String, _ name: String) throws -> Int64 {
        try PostgresConnection(PostgresAddress(queue)).execute(sql, [.text(name)]).rows[0].int("n")
    }

    @Test func failuresListEveryFailureOfTheRunFilteredAndRunsCountEachWorker() async throws {
        var urls: [String] = []
        for index in 0..<6 {
            let path = dir + "/ok\(index).bin"
            _ = try nginx.put(path, randomBytes: 2_000, seed: UInt64(index + 1))
            urls.append(nginx.url(path, host: hosts[index % 2], tls: false))
        }
        // 404s on both hosts (kind http), and a refused connection (kind network).
        let missing = (0..<25).map { nginx.url(dir + "/missing\($0).bin", host: hosts[$0 % 2], tls: false) }
        let refused = "http://c.control.test:9/nothing.bin"
        let jobFile = try job.write("job.lua", """
            \((urls + missing + [refused]).map { "dl.add('\($0)')" }.joined(separator: "\n"))
            dl.store.set("kept", "yes")
            """)
        let name = "failures"
        let extra = ["-j", "2", "--retries", "0", "--resolve", "c.control.test:9:127.0.0.1"]
        let workers = try (0..<2).map { _ in try worker(jobFile, name: name, extra) }
        let ended = await offThePool { workers.map { $0.finish() } }
        #expect(ended.map(\.status) == [1, 1], "\(ended.map(\.stderr))")

        // Every failure, not the 20 of status.
        let all = await control(["failures", "--json"], name: name)
        #expect(all.status == 0, "\(all.stderr)")
        let list = try #require(try json(all.stdout) as? [String: Any])
        let failures = try #require(list["failures"] as? [[String: Any]])
        #expect(failures.count == 26)
        #expect(Set(failures.compactMap { $0["url"] as? String }) == Set(missing + [refused]))
        let byHost = await control(["failures", "--host", hosts[1], "--kind", "http", "--json"], name: name)
        let filtered = try #require((try json(byHost.stdout) as? [String: Any])?["failures"] as? [[String: Any]])
        #expect(Set(filtered.compactMap { $0["url"] as? String }) == Set(missing.enumerated().filter { $0.offset % 2 == 1 }.map(\.element)))
        #expect(filtered.allSatisfy { $0["kind"] as? String == "http" && ($0["host"] as? String)?.hasPrefix(hosts[1] + ":") == true })
        let network = await control(["failures", "--kind", "network"], name: name)
        #expect(network.stdout.hasPrefix("run #") && network.stdout.contains("1 failed") && network.stdout.contains(refused), "\(network)")

        // The history: the run's counts, and each worker's adding up to them.
        let runs = await control(["runs", "--json"], name: name)
        #expect(runs.status == 0, "\(runs.stderr)")
        let history = try #require(try json(runs.stdout) as? [[String: Any]])
        #expect(history.count == 1)
        let run = try #require(history.first)
        #expect(run["status"] as? String == "ended" && run["exit_code"] as? Int == 1)
        #expect(run["finished"] as? Int == 6 && run["failed"] as? Int == 26)
        let shares = try #require(run["workers"] as? [[String: Any]])
        #expect(shares.count == 2 && shares.allSatisfy { $0["hostname"] is String && $0["pid"] is Int })
        #expect(shares.compactMap { $0["finished"] as? Int }.reduce(0, +) == 6)
        #expect(shares.compactMap { $0["failed"] as? Int }.reduce(0, +) == 26)
        let text = await control(["runs"], name: name)
        #expect(text.stdout.contains("6 downloaded, 0 unchanged, 26 failed"), "\(text.stdout)")

        // Purge: the ended run and its workers' rows go; what a re-run needs stays.
        let facts = "SELECT count(*) AS n FROM dlpipe.url_facts f JOIN dlpipe.jobs j ON j.id = f.job_id WHERE j.name = $1"
        let stored = "SELECT count(*) AS n FROM dlpipe.store s JOIN dlpipe.jobs j ON j.id = s.job_id WHERE j.name = $1"
        let (factsBefore, storedBefore) = (try scalar(facts, name), try scalar(stored, name))
        let young = await control(["purge", "--older-than", "1h"], name: name)
        #expect(young.status == 0 && young.stdout.contains("deleted 0 ended runs"), "\(young)")
        let purged = await control(["purge", "--older-than", "0s", "--json"], name: name)
        let answer = try #require(try json(purged.stdout) as? [String: Any])
        #expect(answer["runs_deleted"] as? Int == 1 && answer["worker_rows_deleted"] as? Int == 2 && answer["runs_kept"] as? Int == 0)
        #expect(try scalar(facts, name) == factsBefore && factsBefore == 32)
        #expect(try scalar(stored, name) == storedBefore && storedBefore >= 1)
        #expect(await control(["runs", "--json"], name: name).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
        // A re-run asks conditionally: every file that was fetched is unchanged.
        let again = await offThePool { try? worker(jobFile, name: name, extra).finish() }
        #expect(again?.status == 1)
        let rerun = try #require(try json(await control(["runs", "--json"], name: name).stdout) as? [[String: Any]])
        #expect(rerun.first?["unchanged"] as? Int == 6 && rerun.first?["finished"] as? Int == 0)

        // A run that is not there (never made, or purged) is not "no failure".
        let noRun = await control(["failures", "--run", "99"], name: name)
        #expect(noRun.status == 1 && noRun.stderr.contains("has no run #99") && noRun.stdout.isEmpty, "\(noRun)")
        let usage = await control(["purge", "--older-than", "30"], name: name)
        #expect(usage.status == 2)
        let unknown = await control(["runs"], name: "no-such-job")
        #expect(unknown.status == 1 && unknown.stderr.contains("\"failures\""), "\(unknown)")
    }

    /// How many of the job's downloads a worker holds (status running).
    func running(_ name: String) throws -> Int64 {
        try statuses(name)["running"] ?? 0
    }

    @Test func pauseStopsEveryClaimUntilResumeAndStatusSaysSo() async throws {
        // 400 KB at 100 KiB/s: about 4 s each, still transferring when paused
        // (and the first two of eight, on a loaded machine too).
        var urls: [String] = []
        for index in 0..<8 {
            urls.append(try fixture.slowFile("p\(index).bin", size: 400_000, seed: UInt64(40 + index), hostIndex: index).url)
        }
        let jobFile = try job.write("job.lua", urls.map { "dl.add('\($0)')" }.joined(separator: "\n"))
        let name = "paused"
        let workers = try (0..<2).map { _ in try worker(jobFile, name: name, ["-j", "1", "--json"]) }
        // A command run while the workers claim: the first transfer is under way.
        _ = await offThePool { workers[0].waitForLine(containing: "\"event\":\"progress\"") }
        let paused = await control(["pause"], name: name)
        #expect(paused.status == 0 && paused.stdout.hasPrefix("paused job paused"), "\(paused)")
        #expect(await control(["pause"], name: name).stdout.hasPrefix("job paused was already paused"))
        // What ran finishes; claims held ahead go back; nothing new is claimed.
        _ = try pollUntil(seconds: 30) { try running(name) == 0 ? true : nil }
        let settled = try statuses(name)
        let finishedWhilePaused = settled["finished"] ?? 0
        #expect((settled["ready"] ?? 0) > 0 && finishedWhilePaused < 8, "\(settled)")
        // A worker started while paused joins and claims nothing; killed, it
        // leaves nothing behind (a fault while paused).
        let late = try worker(jobFile, name: name, ["-j", "1", "--json"])
        let lateID = try pollUntil(seconds: 30) { () -> Int64? in
            let rows = try PostgresConnection(PostgresAddress(queue)).execute(
                """
                SELECT w.id FROM dlpipe.workers w JOIN dlpipe.jobs j ON j.id = w.job_id
                WHERE j.name = $1 AND w.run_id IS NOT NULL AND w.heartbeat_at > w.started_at + interval '1.5 s'
                ORDER BY w.id DESC LIMIT 1 OFFSET 0
                """, [.text(name)]).rows
            guard let id = try rows.first?.int("id"), try scalar(
                "SELECT count(*) AS n FROM dlpipe.workers w JOIN dlpipe.jobs j ON j.id = w.job_id WHERE j.name = $1", name) == 3
            else { return nil }
            return id
        }
        #expect(try statuses(name) == settled)
        #expect(try scalar("SELECT count(*) AS n FROM dlpipe.downloads WHERE worker_id = \(lateID) AND $1 <> ''", name) == 0)
        let status = await offThePool {
            try? Subprocess(Paths.binary, ["status", "--queue", queue, "--name", name], environment: ["NO_COLOR": "1"], timeout: 60).finish()
        }
        #expect(status?.stdout.contains("job: paused (paused ") == true, "\(status?.stdout ?? "")")
        late.signal(SIGKILL)
        _ = await offThePool { late.finish() }

        let resumed = await control(["resume"], name: name)
        #expect(resumed.status == 0 && resumed.stdout.hasPrefix("resumed job paused"), "\(resumed)")
        let ended = await offThePool { workers.map { $0.finish() } }
        #expect(ended.map(\.status) == [0, 0], "\(ended.map(\.stderr))")
        #expect(try statuses(name) == ["finished": 8])
        #expect(listing(out).filter { !$0.hasPrefix(".") }.count == 8)
    }

    @Test func stopMakesEveryWorkerLeaveAsOnSIGTERMAndSparesLaterOnes() async throws {
        var urls: [String] = []
        // 3 MB at 100 KiB/s, 30 s each: however loaded the machine, no
        // worker ends its share before the stop, which ends them at once.
        for index in 0..<8 {
            urls.append(try fixture.slowFile("s\(index).bin", size: 3_000_000, seed: UInt64(60 + index), hostIndex: index).url)
        }
        let jobFile = try job.write("job.lua", """
            local urls = { \(urls.map { "'\($0)'" }.joined(separator: ", ")) }
            for i = 1, tonumber(dl.var.n) do dl.add(urls[i]) end
            """)
        let name = "stopped"
        let workers = [
            try worker(jobFile, name: name, ["-j", "2", "--json", "--var", "n=8"]),
            try worker(jobFile, name: name, ["-j", "2", "--json", "--var", "n=8", "--follow"]),
        ]
        _ = await offThePool { workers.allSatisfy { $0.waitForLine(containing: "\"event\":\"progress\"") } }
        let stop = await control(["stop", "--json"], name: name)
        #expect(stop.status == 0, "\(stop)")
        let answer = try #require(try json(stop.stdout) as? [String: Any])
        #expect((answer["workers"] as? [Any])?.count == 2 && answer["changed"] as? Bool == true)
        let ended = await offThePool { workers.map { $0.finish() } }
        #expect(ended.map(\.status) == [130, 130], "\(ended.map(\.stderr))")
        for result in ended {
            #expect(result.stderr.contains("dlpipe queue stop") && result.stderr.contains("dlpipe: stopped"), "\(result.stderr)")
        }
        // They gave back what they held: nothing is running, no slot is taken.
        #expect(try running(name) == 0)
        #expect(try scalar(
            "SELECT coalesce(sum(h.in_flight), 0)::bigint AS n FROM dlpipe.hosts h JOIN dlpipe.jobs j ON j.id = h.job_id WHERE j.name = $1",
            name) == 0)
        // A worker started after the stop is not stopped: it runs its job.
        let later = await offThePool { try? worker(jobFile, name: name, ["-j", "2", "--var", "n=2"]).finish() }
        #expect(later?.status == 0, "\(later?.stderr ?? "")")
        #expect(await control(["stop"], name: name).stdout.hasPrefix("job stopped has no live worker"))
    }

    @Test func retryFailedReopensTheRunForAFollowerAndForAWorkerStartedLater() async throws {
        // Three files are missing (404) in the first run, then put in place.
        var urls: [String] = []
        for index in 0..<7 {
            let path = dir + "/r\(index).bin"
            if index < 4 { _ = try nginx.put(path, randomBytes: 3_000, seed: UInt64(80 + index)) }
            urls.append(nginx.url(path, host: hosts[index % 2], tls: false))
        }
        let jobFile = try job.write("job.lua", urls.map { "dl.add('\($0)')" }.joined(separator: "\n"))
        let name = "retried"
        let extra = ["-j", "2", "--retries", "0", "--json"]
        let follower = try worker(jobFile, name: name, extra + ["--follow"])
        let first = try worker(jobFile, name: name, extra)
        let firstEnd = await offThePool { first.finish() }
        #expect(firstEnd.status == 1, "\(firstEnd.stderr)")
        _ = await offThePool { follower.waitForLine(containing: "\"event\":\"done\"") }
        for index in 4..<7 { _ = try nginx.put(dir + "/r\(index).bin", randomBytes: 3_000, seed: UInt64(80 + index)) }
        let connection = try PostgresConnection(PostgresAddress(queue))
        func runRow() throws -> (ended: Bool, exit: Int64?, count: Int64) {
            let row = try connection.execute(
                """
                SELECT bool_and(r.ended_at IS NOT NULL) AS ended, max(r.exit_code) AS exit_code, count(*) AS n
                FROM dlpipe.runs r JOIN dlpipe.jobs j ON j.id = r.job_id WHERE j.name = $1
                """, [.text(name)]).rows[0]
            return (try row.bool("ended"), try row.optionalInt("exit_code"), try row.int("n"))
        }
        #expect(try runRow().ended && (try runRow().count) == 1)

        // Host a's failures (r4, r6): the follower claims them at once, and
        // the run ends again, still failed for r5.
        let some = await control(["retry", "--failed", "--host", hosts[0], "--json"], name: name)
        let answer = try #require(try json(some.stdout) as? [String: Any], "\(some)")
        #expect(answer["retried"] as? Int == 2 && answer["reopened"] as? Bool == true)
        _ = try pollUntil(seconds: 30) { try statuses(name)["finished"] == 6 && (try runRow().ended) ? true : nil }
        // The follower tells the run's second end too (the retried downloads ran in it).
        let secondDone = await offThePool { follower.waitForLine(containing: "\"event\":\"done\"") }
        #expect(secondDone)
        #expect(try runRow().exit == 1 && (try runRow().count) == 1)
        #expect(try statuses(name) == ["finished": 6, "failed": 1])

        // Stopped, the follower is gone; a worker started after the next
        // retry joins the reopened run, sends no top level again, and the
        // run ends with nothing failed.
        _ = await control(["stop"], name: name)
        #expect(await offThePool { follower.finish() }.status == 130)
        let rest = await control(["retry", "--failed"], name: name)
        #expect(rest.stdout.contains("1 failed download ready again; the run is open again"), "\(rest)")
        let late = await offThePool { try? worker(jobFile, name: name, extra).finish() }
        #expect(late?.status == 0, "\(late?.stderr ?? "")")
        let events = late?.stdout.split(separator: "\n").filter { $0.contains("\"event\":\"finished\"") } ?? []
        #expect(events.count == 1 && events.first?.contains("r5.bin") == true, "\(late?.stdout ?? "")")
        #expect(try runRow() == (true, 0, 1))
        #expect(try statuses(name) == ["finished": 7])
        let history = try #require(try json(await control(["runs", "--json"], name: name).stdout) as? [[String: Any]])
        #expect(history.first?["failed"] as? Int == 0 && history.first?["finished"] as? Int == 7)
        // The workers' counts say where each download stands, as the run's
        // do: a retried failure left the count of the worker that failed it,
        // and the run keeps how many were put back.
        let shares = history.first?["workers"] as? [[String: Any]] ?? []
        #expect(shares.compactMap { $0["failed"] as? Int }.reduce(0, +) == 0, "\(shares)")
        #expect(shares.compactMap { $0["finished"] as? Int }.reduce(0, +) == 7, "\(shares)")
        #expect(history.first?["retried"] as? Int == 3, "\(history)")
        let text = await control(["runs"], name: name)
        #expect(text.stdout.contains("7 downloaded, 0 unchanged, 0 failed") && text.stdout.contains("3 failed put back by retry --failed"), "\(text.stdout)")
        #expect(listing(out).filter { !$0.hasPrefix(".") }.count == 7)
    }

    @Test func cancelEndsTheRunsDownloadsCancelledAndDoneRunsOnce() async throws {
        var urls: [String] = []
        for index in 0..<16 {
            urls.append(try fixture.slowFile("c\(index).bin", size: 1_000_000, seed: UInt64(100 + index), hostIndex: index).url)
        }
        let jobFile = try job.write("job.lua", """
            \(urls.map { "dl.add('\($0)')" }.joined(separator: "\n"))
            dl.on("done", function(s) dl.log("done: finished " .. s.finished .. ", cancelled " .. s.cancelled .. ", failed " .. s.failed) end)
            """)
        let name = "cancelled"
        let workers = try (0..<3).map { _ in try worker(jobFile, name: name, ["-j", "2", "--json"]) }
        // The first worker transfers (a later one may find every download
        // claimed ahead already, and show no progress until the run ends).
        _ = await offThePool { workers[0].waitForLine(containing: "\"event\":\"progress\"") }
        // A worker killed holding claims: they come back ready once its
        // lease runs out, after the cancel, and end cancelled then.
        workers[0].signal(SIGKILL)
        let killed = await offThePool { workers[0].finish() }
        #expect(killed.status == 128 + SIGKILL)
        let cancel = await control(["cancel", "--json"], name: name)
        let answer = try #require(try json(cancel.stdout) as? [String: Any], "\(cancel)")
        #expect((answer["queued_cancelled"] as? Int ?? 0) > 0)
        let ended = await offThePool { workers.suffix(2).map { $0.finish() } }
        // Cancelled downloads are neither finished nor failed: exit 0.
        #expect(ended.map(\.status) == [0, 0], "\(ended.map(\.stderr))")
        let logs = ended.map(\.stderr).joined(separator: "\n").split(separator: "\n").filter { $0.contains("done: finished") }
        #expect(logs.count == 1, "done ran once: \(ended.map(\.stderr))")
        let counts = try statuses(name)
        #expect(counts["ready"] == nil && counts["running"] == nil && counts["failed"] == nil, "\(counts)")
        let finished = counts["finished"] ?? 0
        #expect((counts["cancelled"] ?? 0) + finished == 16 && (counts["cancelled"] ?? 0) > 0)
        #expect(logs.first?.contains("done: finished \(finished), cancelled \(16 - finished), failed 0") == true, "\(logs)")
        let history = try #require(try json(await control(["runs", "--json"], name: name).stdout) as? [[String: Any]])
        #expect(history.first?["exit_code"] as? Int == 0 && history.first?["cancelled"] as? Int == Int(16 - finished))
        #expect(await control(["cancel"], name: name).stdout.hasPrefix("job cancelled has no open run"))
    }

    @Test func aWorkerKilledWhileARetryTransfersLeavesItToTheWorkerThatJoins() async throws {
        // Missing in the first run; then 1 MB at 100 KiB/s, so that the
        // retry still transfers when its worker is killed (the second
        // worker's start on a loaded machine takes seconds).
        let slow = "/slow" + dir + "/late.bin"
        let url = nginx.url(slow, host: hosts[0], tls: false)
        let jobFile = try job.write("job.lua", "dl.add('\(url)')")
        let name = "retry-killed"
        let extra = ["-j", "2", "--retries", "0", "--json"]
        let first = await offThePool { try? worker(jobFile, name: name, extra).finish() }
        #expect(first?.status == 1)
        let bytes = try nginx.put(slow, randomBytes: 1_000_000, seed: 120)
        #expect(await control(["retry", "--failed"], name: name).stdout.contains("the run is open again"))
        let doomed = try worker(jobFile, name: name, extra)
        _ = await offThePool { doomed.waitForLine(containing: "\"event\":\"progress\"") }
        // A second worker joins the reopened run while the first lives ...
        let joining = try worker(jobFile, name: name, extra)
        _ = try pollUntil(seconds: 60) {
            try scalar(
                """
                SELECT count(*) AS n FROM dlpipe.workers w JOIN dlpipe.jobs j ON j.id = w.job_id
                WHERE j.name = $1 AND w.stopped_at IS NULL AND w.run_id = (SELECT max(r.id) FROM dlpipe.runs r WHERE r.job_id = j.id)
                """, name) == 2 ? true : nil
        }
        // ... which is then killed: the second takes its claim back when
        // its lease runs out, and fetches it in the same run.
        doomed.signal(SIGKILL)
        _ = await offThePool { doomed.finish() }
        let joined = await offThePool { joining.finish() }
        #expect(joined.status == 0, "\(joined.stderr)")
        #expect(sameBytes(out + "/late.bin", bytes))
        let history = try #require(try json(await control(["runs", "--json"], name: name).stdout) as? [[String: Any]])
        #expect(history.count == 1 && history.first?["exit_code"] as? Int == 0)
        #expect(history.first?["failed"] as? Int == 0 && history.first?["finished"] as? Int == 1)
    }

    @Test func anOlderSchemaIsReadButNotSteered() async throws {
        // Workers of version 14's dlpipe would not obey a pause or a stop.
        let connection = try PostgresConnection(PostgresAddress(queue))
        try SchemaMigrator(Array(QueueSchema.migrations.prefix(QueueSchema.controlsVersion - 1))).migrate(connection)
        _ = try SharedQueue.open(job: "old", limits: JobLimits(perHost: 2), on: connection)
        for verb in [["pause"], ["resume"], ["stop"], ["cancel"], ["retry", "--failed"], ["purge", "--older-than", "1d"]] {
            let refused = await control(verb, name: "old")
            // A retry writes who failed what (version 16), the others the controls (15).
            let needs = verb[0] == "retry" ? QueueSchema.retriedVersion : QueueSchema.controlsVersion
            #expect(refused.status == 1 && refused.stderr.contains("older than `dlpipe queue` needs (\(needs))"), "\(refused)")
        }
        let runs = await control(["runs"], name: "old")
        #expect(runs.status == 0 && runs.stdout == "no run of job old is kept (a worker's start makes one; `dlpipe queue purge` deletes ended ones)\n", "\(runs)")
        #expect(try connection.execute("SELECT version FROM dlpipe.schema_version").rows[0].int("version") == Int64(QueueSchema.controlsVersion - 1))
    }
}
