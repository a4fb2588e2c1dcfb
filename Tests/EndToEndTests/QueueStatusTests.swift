import Foundation
import Testing
import TestSupport

@testable import DLPipe
@testable import DLPipeQueue

/// `dlpipe status --queue URL [--name NAME] [--json]`, the built binary
/// against the throwaway cluster: a job filled through `SharedQueue` is shown
/// as it stands (text and JSON), the job list, an unknown name, a database
/// without a queue, and the errors `run` gives (a bad address exit 2, an
/// unreachable database exit 4); the password never shows.
@Suite struct QueueStatusTests {
    let url: String
    /// `url` with a password (trust authentication ignores it): what a user
    /// would pass, and what must never appear in any output.
    let secretURL: String

    init() throws {
        url = try PostgresCluster.shared().freshDatabase("status")
        secretURL = url.replacingOccurrences(of: "postgresql://\(PostgresCluster.user)@", with: "postgresql://\(PostgresCluster.user):hunter2@")
        #expect(secretURL != url)
    }

    private func connect() throws -> PostgresConnection { try PostgresConnection(PostgresAddress(url)) }

    /// Job "mirror": six downloads on two hosts, a live worker holding one
    /// (its lease an hour: a 30 s lease ran out under load in a full run),
    /// a worker whose lease ran out holding two, one failure, an ended run
    /// and an open one; and an empty job "archive".
    @discardableResult
    private func fill() throws -> (failedURL: String, dead: Int64) {
        let connection = try connect()
        try SchemaMigrator().migrate(connection)
        _ = try SharedQueue.open(job: "archive", limits: JobLimits(perHost: 1), on: connection)
        let queue = try SharedQueue.open(job: "mirror", limits: JobLimits(perHost: 2), on: connection)
        _ = try queue.add(queuedRequests(6, hosts: ["a.test", "b.test"], prefix: "file"), on: connection)
        let alive = try queue.register(hostname: "web1", pid: 4242, lease: 3600, on: connection)
        let dead = try queue.register(hostname: "web2", pid: 4343, lease: 2, on: connection)
        let mine = try queue.claim(worker: alive, limit: 2, on: connection)
        let theirs = try queue.claim(worker: dead, limit: 2, on: connection)
        #expect(mine.count == 2 && theirs.count == 2)
        let failed = mine[0]
        #expect(try queue.report([ClaimReport(id: failed.id, token: failed.token, outcome: .failed, error: "HTTP 503 Service Unavailable")], on: connection).count == 1)
        try connection.execute("UPDATE dlpipe.workers SET lease_until = now() - interval '5 seconds' WHERE id = $1", [.int(dead)])
        try connection.execute(
            """
            INSERT INTO dlpipe.runs (job_id, started_at, ended_at, exit_code, finished, failed)
            VALUES ($1, now() - interval '2 days', now() - interval '47 hours', 1, 9, 1)
            """, [.int(queue.job)])
        try connection.execute("INSERT INTO dlpipe.runs (job_id, finished) VALUES ($1, 0)", [.int(queue.job)])
        return (failed.url, dead)
    }

    private func expectNoSecret(_ run: DLPipeRun) {
        #expect(!run.stdout.contains("hunter2") && !run.stderr.contains("hunter2"), "\(run.stdout)\(run.stderr)")
    }

    private func object(_ text: String) throws -> [String: Any] {
        let lines = text.split(separator: "\n")
        #expect(lines.count == 1, "one JSON object on one line: \(text)")
        return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    @Test func aJobIsShownAsItStands() async throws {
        let (failedURL, dead) = try fill()
        let run = try await DLPipeRun.run(["status", "--queue", secretURL, "--name", "mirror"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.isEmpty, "\(run.stderr)")
        expectNoSecret(run)
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "queue: " + secretURL.replacingOccurrences(of: "hunter2", with: "***"), "\(run.stdout)")
        #expect(lines.contains("job: mirror (per host 2)"), "\(run.stdout)")
        #expect(lines.contains("downloads: 2 ready, 3 transferring, 1 failed"), "\(run.stdout)")
        #expect(lines.contains("workers: 1 alive, 1 lease expired"), "\(run.stdout)")
        let alive = try #require(lines.first { $0.contains("web1 pid 4242") }, "\(run.stdout)")
        #expect(alive.contains(": heartbeat ") && alive.contains(" ago, lease ") && alive.hasSuffix(" left, 1 transferring"), "\(alive)")
        let expired = try #require(lines.first { $0.hasPrefix("  #\(dead) web2 pid 4343: lease expired ") }, "\(run.stdout)")
        #expect(expired.contains("(dead; 2 transferring, not yet taken back)"), "\(expired)")
        #expect(lines.contains("in flight: 3 on 2 hosts"), "\(run.stdout)")
        #expect(lines.contains { $0.hasPrefix("  a.test: ") } && lines.contains { $0.hasPrefix("  b.test: ") }, "\(run.stdout)")
        #expect(lines.contains("failed: 1"), "\(run.stdout)")
        #expect(lines.contains { $0.hasPrefix("  \(failedURL): HTTP 503 Service Unavailable (attempts: 1, ") && $0.hasSuffix(" ago)") }, "\(run.stdout)")
        let runs = try #require(lines.firstIndex(of: "runs:"), "\(run.stdout)")
        #expect(lines[runs + 1].hasPrefix("  #2 started ") && lines[runs + 1].contains(" ago, running: 0 downloaded, 0 unchanged, "), "\(run.stdout)")
        // Days and hours ago: what it shows holds for the hour after fill().
        #expect(lines[runs + 2] == "  #1 started 2 d ago, ended 1 d 23 h ago, exit 1: 9 downloaded, 0 unchanged, 1 failed, 0 handled", "\(run.stdout)")
    }

    @Test func jsonIsOneObjectWithTheSameFigures() async throws {
        let (failedURL, dead) = try fill()
        let run = try await DLPipeRun.run(["status", "--queue", secretURL, "--name", "mirror", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        expectNoSecret(run)
        let status = try object(run.stdout)
        #expect(status["queue"] as? String == secretURL.replacingOccurrences(of: "hunter2", with: "***"))
        #expect(status["schema_version"] as? Int == QueueSchema.latest)
        #expect(status["job"] as? String == "mirror")
        #expect(status["per_host"] as? Int == 2)
        #expect(status["max_downloads"] == nil)
        for (key, value) in ["ready": 2, "scheduled": 0, "running": 3, "transferring": 3, "held_ahead": 0, "placing": 0,
                             "finished": 0, "failed": 1, "handled": 0,
                             "workers_alive": 1, "workers_expired": 1, "in_flight": 3, "hosts_in_flight": 2] {
            #expect(status[key] as? Int == value, "\(key): \(run.stdout)")
        }
        let workers = try #require(status["workers"] as? [[String: Any]])
        let deadOne = try #require(workers.first { $0["id"] as? Int == Int(dead) }, "\(workers)")
        #expect(deadOne["state"] as? String == "lease expired")
        #expect(deadOne["running"] as? Int == 2 && deadOne["transferring"] as? Int == 2 && deadOne["held_ahead"] as? Int == 0)
        #expect((deadOne["lease_left"] as? Double).map { $0 <= -5 } == true, "\(deadOne)")
        #expect(workers.filter { $0["state"] as? String == "alive" }.map { $0["hostname"] as? String } == ["web1"])
        let hosts = try #require(status["hosts"] as? [[String: Any]])
        #expect(hosts.compactMap { $0["in_flight"] as? Int }.reduce(0, +) == 3)
        let failures = try #require(status["failures"] as? [[String: Any]])
        #expect(failures.count == 1)
        #expect(failures.first?["url"] as? String == failedURL)
        #expect(failures.first?["last_error"] as? String == "HTTP 503 Service Unavailable")
        let runs = try #require(status["runs"] as? [[String: Any]])
        #expect(runs.map { $0["status"] as? String } == ["running", "ended"])
        #expect(runs.last?["exit_code"] as? Int == 1)
        #expect((runs.last?["ended_ago"] as? Double).map { $0 >= 47 * 3600 && $0 < 48 * 3600 } == true, "\(runs)")
    }

    /// Claims held ahead are not transfers: a worker with 2 transfers, one
    /// transfer ended (its file being placed) and 4 claims ahead showed as
    /// "7 running" (107 with 8 transfers in a real run).
    @Test func claimsHeldAheadAreToldFromTransfers() async throws {
        let connection = try connect()
        try SchemaMigrator().migrate(connection)
        let queue = try SharedQueue.open(job: "ahead", limits: JobLimits(perHost: 3), on: connection)
        _ = try queue.add(queuedRequests(12, hosts: ["a.test"], prefix: "file"), on: connection)
        let worker = try queue.register(hostname: "web1", pid: 5151, lease: 3600, on: connection)
        let slotted = try queue.claim(worker: worker, limit: 3, on: connection)
        let ahead = try queue.claimAhead(worker: worker, hosts: ["a.test"], limit: 4, on: connection)
        #expect(slotted.count == 3 && ahead.count == 4)
        // The first transfer ended: its slot went back, its file is being placed.
        #expect(try queue.giveBack([(slotted[0].id, slotted[0].token)], on: connection) == 1)

        let text = try await DLPipeRun.run(["status", "--queue", url, "--name", "ahead"])
        #expect(text.status == 0, "\(text.stderr)")
        let lines = text.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("downloads: 5 ready, 2 transferring, 4 held ahead, 1 placing"), "\(text.stdout)")
        let line = try #require(lines.first { $0.contains("web1 pid 5151") }, "\(text.stdout)")
        #expect(line.hasSuffix(" left, 2 transferring, 4 held ahead, 1 placing"), "\(line)")
        #expect(lines.contains("in flight: 2 on 1 host"), "\(text.stdout)")

        let json = try object(try await DLPipeRun.run(["status", "--queue", url, "--name", "ahead", "--json"]).stdout)
        for (key, value) in ["ready": 5, "running": 7, "transferring": 2, "held_ahead": 4, "placing": 1, "in_flight": 2] {
            #expect(json[key] as? Int == value, "\(key): \(json)")
        }
        let one = try #require((json["workers"] as? [[String: Any]])?.first, "\(json)")
        for (key, value) in ["running": 7, "transferring": 2, "held_ahead": 4, "placing": 1] {
            #expect(one[key] as? Int == value, "\(key): \(one)")
        }

        // The job list says the same.
        let list = try await DLPipeRun.run(["status", "--queue", url])
        #expect(list.stdout.contains("  ahead: 5 ready, 2 transferring, 4 held ahead, 1 placing; workers: 1 alive"), "\(list.stdout)")
    }

    /// 25 failures and 25 busy hosts: the 20 most recent failures and the 20
    /// busiest hosts are listed, the totals say how many there are.
    @Test func longListsAreCutAtTwentyWithTheirTotals() async throws {
        let connection = try connect()
        try SchemaMigrator().migrate(connection)
        let queue = try SharedQueue.open(job: "wide", limits: JobLimits(perHost: 1), on: connection)
        let hosts = (0..<25).map { "h\($0).test" }
        _ = try queue.add(queuedRequests(50, hosts: hosts, prefix: "file"), on: connection)
        let worker = try queue.register(hostname: "w", pid: 1, lease: 3600, on: connection)
        let first = try queue.claim(worker: worker, limit: 50, on: connection)
        #expect(first.count == 25)  // one a host
        let reports = first.map { ClaimReport(id: $0.id, token: $0.token, outcome: .failed, error: "HTTP 500") }
        #expect(try queue.report(reports, on: connection).count == 25)
        #expect(try queue.claim(worker: worker, limit: 50, on: connection).count == 25)

        let text = try await DLPipeRun.run(["status", "--queue", url, "--name", "wide"])
        #expect(text.status == 0, "\(text.stderr)")
        let lines = text.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("in flight: 25 on 25 hosts, the 20 busiest:"), "\(text.stdout)")
        #expect(lines.filter { $0.hasPrefix("  h") && $0.hasSuffix(": 1 (0 waiting)") }.count == 20, "\(text.stdout)")
        #expect(lines.contains("failed: 25, the 20 most recent:"), "\(text.stdout)")
        #expect(lines.filter { $0.contains(": HTTP 500 (attempts: 1, ") }.count == 20, "\(text.stdout)")

        let json = try object(try await DLPipeRun.run(["status", "--queue", url, "--name", "wide", "--json"]).stdout)
        #expect(json["failed"] as? Int == 25 && (json["failures"] as? [Any])?.count == 20)
        #expect(json["hosts_in_flight"] as? Int == 25 && json["in_flight"] as? Int == 25 && (json["hosts"] as? [Any])?.count == 20)
    }

    @Test func withoutANameEachJobIsOneLine() async throws {
        try fill()
        let text = try await DLPipeRun.run(["status", "--queue", secretURL])
        #expect(text.status == 0, "\(text.stderr)")
        expectNoSecret(text)
        #expect(Array(text.stdout.split(separator: "\n").dropFirst()) == [
            "jobs:",
            "  archive: no downloads; workers: none",
            "  mirror: 2 ready, 3 transferring, 1 failed; workers: 1 alive, 1 lease expired",
        ], "\(text.stdout)")
        // DLPIPE_QUEUE gives the address when no directory is named, as for run.
        let json = try await DLPipeRun.run(["status", "--json"], environment: ["DLPIPE_QUEUE": secretURL])
        #expect(json.status == 0, "\(json.stderr)")
        expectNoSecret(json)
        let jobs = try #require(try object(json.stdout)["jobs"] as? [[String: Any]])
        #expect(jobs.map { $0["job"] as? String } == ["archive", "mirror"])
        #expect(jobs.last?["running"] as? Int == 3 && jobs.last?["workers_expired"] as? Int == 1)
    }

    /// A directory named on the command line is that directory's status,
    /// whatever DLPIPE_QUEUE says.
    @Test func aDirectoryWinsOverTheEnvironment() async throws {
        let directory = try TempDir.make("status-dir")
        let run = try await DLPipeRun.run(["status", directory], environment: ["DLPIPE_QUEUE": "postgresql://nowhere.invalid/db"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("no dlpipe state"), "\(run.stdout)")
    }

    @Test func anUnknownNameListsTheJobsAndExitsOne() async throws {
        try fill()
        for extra in [[], ["--json"]] {
            let run = try await DLPipeRun.run(["status", "--queue", secretURL, "--name", "mirorr"] + extra)
            #expect(run.status == 1, "\(run.stderr)")
            #expect(run.stdout.isEmpty)
            expectNoSecret(run)
            #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
            #expect(run.stderr.hasPrefix("dlpipe: no job \"mirorr\" in the queue at "), "\(run.stderr)")
            #expect(run.stderr.hasSuffix("; its jobs: \"archive\", \"mirror\"\n"), "\(run.stderr)")
        }
    }

    /// A database no worker used: said so, exit 1, and still no schema in it.
    @Test func aDatabaseWithoutAQueueIsSaidSoAndLeftAsItWas() async throws {
        for extra in [["--name", "mirror"], []] {
            let run = try await DLPipeRun.run(["status", "--queue", secretURL] + extra)
            #expect(run.status == 1, "\(run.stderr)")
            #expect(run.stdout.isEmpty)
            expectNoSecret(run)
            #expect(run.stderr.hasPrefix("dlpipe: no dlpipe queue in this database ("), "\(run.stderr)")
        }
        #expect(try connect().execute("SELECT count(*) AS n FROM pg_namespace WHERE nspname = 'dlpipe'").rows[0].int("n") == 0)
    }

    /// A database at schema version 1 is shown as it is and left at 1; once
    /// this dlpipe knows a later version, the text says a worker migrates it.
    @Test func anOlderSchemaIsReadAndNotMigrated() async throws {
        let connection = try connect()
        try SchemaMigrator(Array(QueueSchema.migrations.prefix(1))).migrate(connection)
        _ = try SharedQueue.open(job: "old", limits: JobLimits(perHost: 1), on: connection)
        let text = try await DLPipeRun.run(["status", "--queue", url, "--name", "old"])
        #expect(text.status == 0, "\(text.stderr)")
        let note = "schema: version 1 (a worker of this dlpipe migrates it to \(QueueSchema.latest) when it starts)"
        #expect(text.stdout.contains(note) == (QueueSchema.latest > 1), "\(text.stdout)")
        let json = try await DLPipeRun.run(["status", "--queue", url, "--name", "old", "--json"])
        #expect(try object(json.stdout)["schema_version"] as? Int == 1, "\(json.stdout)")
        #expect(try connection.execute("SELECT version FROM dlpipe.schema_version").rows[0].int("version") == 1)
    }

    @Test func anUnreachableDatabaseIsOneLineAndExitFour() async throws {
        let missing = try TempDir.make("no-pg")
        let address = "postgresql://watcher:hunter2@/jobs?host=\(missing)"
        for extra in [["--name", "mirror"], ["--json"]] {
            let run = try await within(seconds: 30, "status of a queue with no server") {
                try? await DLPipeRun.run(["status", "--queue", address] + extra)
            }
            let finished = try #require(run)
            #expect(finished.status == 4, "\(finished.stderr)")
            // No server behind the socket: libpq fails at once (it would wait
            // at most its 10 s connect_timeout for a server that says nothing).
            #expect(finished.seconds < 10, "\(finished.seconds) s")
            #expect(finished.stdout.isEmpty)
            #expect(finished.stderr.split(separator: "\n").count == 1, "\(finished.stderr)")
            #expect(finished.stderr.hasPrefix("dlpipe: cannot reach the queue: cannot connect to postgresql://watcher:***@/jobs"), "\(finished.stderr)")
            expectNoSecret(finished)
        }
    }

    @Test(arguments: [
        ["--queue", "mysql://db.example/jobs"],
        ["--queue", "postgresql://u:hunter2@db.example:99999/jobs", "--name", "mirror"],
        ["--queue", "jobs"],
        ["--queue", "postgresql://db.example/jobs", "--name", ""],
        ["--queue", "postgresql://db.example/jobs", "."],
        ["--queue", "postgresql://db.example/jobs", "--state", "x.db"],
        ["--name", "mirror"],
    ])
    func badQueueOptionsAreUsageErrors(_ extra: [String]) async throws {
        let run = try await DLPipeRun.run(["status"] + extra)
        #expect(run.status == 2, "\(extra): \(run.stderr)")
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 2, "\(run.stderr)")
        #expect(lines.last == "Try 'dlpipe status --help' for more information.")
        #expect(run.stdout.isEmpty)
        expectNoSecret(run)
    }

    @Test func aBadAddressInTheEnvironmentIsAUsageErrorNamingIt() async throws {
        let run = try await DLPipeRun.run(["status"], environment: ["DLPIPE_QUEUE": "redis://u:hunter2@cache/0"])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.hasPrefix("dlpipe: DLPIPE_QUEUE: "), "\(run.stderr)")
        expectNoSecret(run)
    }

    @Test func theHelpDescribesTheQueueForm() async throws {
        let run = try await DLPipeRun.run(["status", "--help"])
        #expect(run.status == 0)
        for text in ["--queue URL", "--name NAME", "DLPIPE_QUEUE", "lease expired", "failures"] {
            #expect(run.stdout.contains(text), "\(text): \(run.stdout)")
        }
    }
}
