@testable import DLPipe
@testable import DLPipeQueue
import Foundation
import Testing
import TestSupport

/// Queue mode's edges that a user trial found: what a stopped worker says and
/// does, `--state` with a queue, running without the queue that
/// `DLPIPE_QUEUE` names, exit code 4 in the help, credentials kept after a
/// download ended, and the ids of the job's top-level adds.
@Suite struct QueueEdgeTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "queue-edge")
        try server.put("a.bin", randomBytes: 100)
    }

    private func jobFile(config: String = "") throws -> String {
        try job.write("job.lua", config + "dl.add('\(server.url("/files/a.bin"))')\n")
    }

    /// A queue URL whose database is a socket folder with no server: a run
    /// that tried it would exit 4 at once.
    private func missingQueue() throws -> String {
        "postgresql://worker@/jobs?host=" + (try TempDir.make("no-pg"))
    }

    private func expectNothingDone(_ run: DLPipeRun) throws {
        #expect(try server.requests(matching: "/").isEmpty, "\(run.stderr)")
        #expect(listing(out).isEmpty)
        #expect(run.stdout.isEmpty)
    }


    private func rows(_ queue: String, _ sql: String) throws -> [PostgresRow] {
        try PostgresConnection(PostgresAddress(queue)).execute(sql).rows
    }

    // MARK: SIGTERM of a worker

    @Test func aStoppedWorkerSaysItGivesItsDownloadsBackAndDoesSo() async throws {
        let queue = try PostgresCluster.shared().freshDatabase("edge-stop")
        // 50 KB, then a stall until the client goes (once: the next request gets it all).
        let body = try server.put("big.bin", randomBytes: 500_000)
        let path = try job.write("job.lua", "dl.add('\(server.url("/files/big.bin?stall=50000&stall_times=1"))')\n")
        let arguments = ["run", path, "-d", out, "--queue", queue, "--name", "edge", "--settle", "0", "--json"]
        let worker = try Subprocess(Paths.binary, arguments, timeout: 60)
        let (partsBefore, stopped) = await offThePool { () -> ([String], (status: Int32, stdout: String, stderr: String)) in
            worker.waitForLine(containing: "\"bytes\":50000,")
            let parts = partFiles(under: out)
            worker.signal(SIGTERM)
            return (parts, worker.finish())
        }
        #expect(partsBefore.count == 1, "the worker wrote its part file: \(partsBefore)")
        #expect(stopped.status == 130, "\(stopped.stderr)")
        #expect(stopped.stderr.contains("this worker's downloads go back to the queue for the other workers and its part files are removed"), "\(stopped.stderr)")
        #expect(!stopped.stderr.contains("part files are kept"), "\(stopped.stderr)")
        #expect(partFiles(under: out).isEmpty, "the leaving worker removed its part file")
        // It was the run's last worker: the run ended with it, and so did
        // what it held (QueueInterruptedRunTests); no worker holds it.
        #expect(try rows(queue, "SELECT status, worker_id FROM dlpipe.downloads").map {
            [try $0.text("status"), try $0.optionalInt("worker_id").map(String.init) ?? "none"]
        } == [["cancelled", "none"]])
        // The next run queues it again and takes it from the start.
        let next = try await DLPipeRun.run(arguments.filter { $0 != "--json" })
        #expect(next.status == 0, "\(next.stderr)")
        #expect(sameBytes(out + "/big.bin", body))
        #expect(partFiles(under: out).isEmpty)
    }

    // MARK: --state with a queue

    @Test(arguments: ["option", "environment", "config"])
    func stateWithAQueueIsAUsageError(_ way: String) async throws {
        let queue = try missingQueue()
        let path = try jobFile(config: way == "config" ? "dl.config{ queue = '\(queue)' }\n" : "")
        let state = try TempDir.make("edge-state") + "/state.db"
        let run = try await DLPipeRun.run(
            ["run", path, "-d", out, "--name", "edge", "--state", state] + (way == "option" ? ["--queue", queue] : []),
            environment: way == "environment" ? ["DLPIPE_QUEUE": queue] : [:])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("--state FILE does not go with a shared queue"), "\(run.stderr)")
        #expect(run.stderr.contains("the queue's database holds the state of every worker"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: state))
        try expectNothingDone(run)
    }

    // MARK: running without the queue DLPIPE_QUEUE names

    @Test(arguments: [["--no-queue"], ["--queue", ""]])
    func theQueueCanBeTurnedOffForOneRun(_ optOut: [String]) async throws {
        let run = try await DLPipeRun.run(
            ["run", try jobFile(config: "dl.config{ queue = '\(try missingQueue())' }\n"), "-d", out] + optOut,
            environment: ["DLPIPE_QUEUE": try missingQueue()])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(listing(out) == ["a.bin"])
        // The local SQLite state, as without a queue: the next run asks conditionally.
        #expect(FileManager.default.fileExists(atPath: out + "/.dlpipe/state.db"))
        let status = try await DLPipeRun.run(["status", out, "--json"])
        #expect(status.stdout.contains("\"finished\":1"), "\(status.stdout)")
    }

    @Test(arguments: [["--no-queue", "--queue", "postgresql://db.example/jobs"], ["--no-queue", "--name", "edge"]])
    func turningTheQueueOffWithQueueSettingsIsAUsageError(_ extra: [String]) async throws {
        let run = try await DLPipeRun.run(["run", try jobFile(), "-d", out] + extra)
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("--no-queue"), "\(run.stderr)")
        try expectNothingDone(run)
    }

    // MARK: help

    @Test func theHelpListsExitCodeFourAndTheOptOut() async throws {
        let main = try await DLPipeRun.run(["--help"])
        #expect(main.status == 0)
        #expect(main.stdout.contains("4 a shared queue's database cannot be reached"), "\(main.stdout)")
        let run = try await DLPipeRun.run(["run", "--help"])
        #expect(run.status == 0)
        for text in ["3 another run holds the directory's lock", "4 the queue's database cannot be reached", "lost its lease", "130 stopped", "--no-queue"] {
            #expect(run.stdout.contains(text), "\(text): \(run.stdout)")
        }
    }

    // MARK: credentials of ended downloads

    @Test func anEndedDownloadKeepsNoCredentialsAndAReRunSendsThemAgain() async throws {
        let queue = try PostgresCluster.shared().freshDatabase("edge-secret")
        try server.put("b.bin", randomBytes: 200)
        let withUser = server.url("/files/b.bin").replacingOccurrences(of: "http://", with: "http://reader:pass-456@")
        let path = try job.write("job.lua", """
            dl.add{ url = '\(server.url("/files/a.bin"))', headers = { Authorization = 'Bearer tok-123' } }
            dl.add('\(withUser)')
            """)
        let arguments = ["run", path, "-d", out, "--queue", queue, "--name", "edge", "--settle", "0"]
        for round in 1...2 {
            let run = try await DLPipeRun.run(arguments)
            #expect(run.status == 0, "round \(round): \(run.stderr)")
            let kept = try rows(queue, "SELECT status, secret::text AS secret FROM dlpipe.downloads ORDER BY id")
            #expect(try kept.map { try $0.text("status") } == ["finished", "finished"], "round \(round)")
            #expect(try kept.allSatisfy { try $0.optionalText("secret") == nil }, "round \(round): an ended row keeps its credentials")
        }
        // Each request, the re-run's too, carried its credentials.
        let bearer = try server.requests(matching: "/files/a.bin").map { ($0["headers"] as? [String: String])?["authorization"] }
        #expect(bearer == ["Bearer tok-123", "Bearer tok-123"], "\(bearer)")
        let basic = "Basic " + Data("reader:pass-456".utf8).base64EncodedString()
        let user = try server.requests(matching: "/files/b.bin").map { ($0["headers"] as? [String: String])?["authorization"] }
        #expect(user == [basic, basic], "\(user)")
    }

    // MARK: ids of top-level adds

    @Test func aTopLevelIdCancelsItsOwnRow() async throws {
        let queue = try PostgresCluster.shared().freshDatabase("edge-ids")
        // Another job of the database first, so that this job's rows are not numbered 1, 2.
        let other = try job.write("other.lua", (1...3).map { "dl.add('\(server.url("/files/a.bin?other=\($0)"))')\n" }.joined())
        let first = try await DLPipeRun.run(["run", other, "-d", try TempDir.make("edge-other"), "--queue", queue, "--name", "other", "--settle", "0"])
        #expect(first.status == 0, "\(first.stderr)")
        try server.put("victim.bin", randomBytes: 300)
        // One slot on the one host: the urgent download is claimed alone, and
        // its response handler cancels the other while it waits in the queue.
        let path = try job.write("job.lua", """
            local urgent = dl.add{ url = '\(server.url("/files/a.bin"))', priority = 10 }
            local victim = dl.add{ url = '\(server.url("/files/victim.bin"))', headers = { Authorization = 'Bearer tok-789' } }
            dl.log("top-level ids: " .. urgent .. " " .. victim)
            dl.on("response", function(d)
              if d.id ~= victim then dl.cancel(victim) end
            end)
            dl.on("done", function(s) dl.log("done counts cancelled " .. s.cancelled) end)
            """)
        let run = try await DLPipeRun.run(
            ["run", path, "-d", out, "--queue", queue, "--name", "edge", "--settle", "0", "-j", "1", "--per-host", "1"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("top-level ids: -1 -2"), "\(run.stderr)")
        #expect(try server.requests(matching: "/files/victim.bin").isEmpty, "a worker fetched the cancelled download")
        #expect(listing(out) == ["a.bin"])
        let victim = try rows(queue, "SELECT status, secret::text AS secret FROM dlpipe.downloads WHERE url LIKE '%victim%'")
        #expect(try victim.map { try $0.text("status") } == ["cancelled"])
        #expect(try victim.first?.optionalText("secret") == nil, "the cancelled row keeps its credentials")
        // The run counts it: done's s.cancelled is job-wide.
        #expect(run.stderr.contains("done counts cancelled 1"), "\(run.stderr)")
        // The worker that cancelled it says so once, as a run without a queue
        // does, under its row's id, and its summary counts it.
        let id = try rows(queue, "SELECT id FROM dlpipe.downloads WHERE url LIKE '%victim%'").first?.int("id")
        let lines = run.stderr.split(separator: "\n").filter { $0.hasPrefix("cancelled ") }
        #expect(lines == ["cancelled \(server.url("/files/victim.bin")) [\(id ?? 0)]"], "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").last?.contains("1 cancelled") == true, "\(run.stderr)")
    }

    @Test func aQueueConfiguredAfterTheFirstAddIsALoadError() async throws {
        let path = try job.write("job.lua", """
            dl.add('\(server.url("/files/a.bin"))')
            dl.config{ queue = '\(try missingQueue())' }
            """)
        let run = try await DLPipeRun.run(["run", path, "-d", out, "--name", "edge"])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("job.lua:2: dl.config: queue is set after the job's first dl.add"), "\(run.stderr)")
        try expectNothingDone(run)
    }
}

/// `status` takes the opt-out too: the directory's status whatever `DLPIPE_QUEUE` says.
@Suite struct QueueStatusOptOutTests {
    @Test(arguments: [["--no-queue"], ["--queue", ""]])
    func statusShowsTheDirectoryWhenTheQueueIsTurnedOff(_ optOut: [String]) async throws {
        let server = try FaultServer()
        try server.put("a.bin", randomBytes: 100)
        let out = try TempDir.make("queue-edge-status")
        let fetched = try await DLPipeRun.run(["get", server.url("/files/a.bin"), "-d", out])
        #expect(fetched.status == 0, "\(fetched.stderr)")
        let missing = "postgresql://worker@/jobs?host=" + (try TempDir.make("no-pg"))
        let status = try await DLPipeRun.run(["status", out, "--json"] + optOut, environment: ["DLPIPE_QUEUE": missing])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.contains("\"finished\":1"), "\(status.stdout)")
        let both = try await DLPipeRun.run(["status", "--no-queue", "--queue", missing])
        #expect(both.status == 2, "\(both.stderr)")
        #expect(both.stderr.contains("--no-queue and --queue URL contradict each other"), "\(both.stderr)")
    }
}
