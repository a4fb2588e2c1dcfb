import Foundation
import Testing
import TestSupport

@testable import DLPipe
@testable import DLPipeQueue

/// `run --queue URL --name NAME`: bad values are usage errors and a database
/// that does not answer is exit 4, never with a request made; one that
/// answers runs the job as a worker of the queue.
@Suite struct QueueOptionTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "queue-out")
        try server.put("a.bin", randomBytes: 100)
    }

    private func jobFile(config: String = "") throws -> String {
        try job.write("job.lua", config + "dl.add('\(server.url("/files/a.bin"))')\n")
    }

    /// Nothing was asked of the server, and nothing written in the directory.
    private func expectNothingDone(_ run: DLPipeRun) throws {
        #expect(try server.requests(matching: "/").isEmpty, "\(run.stderr)")
        #expect(listing(out).isEmpty)
        #expect(run.stdout.isEmpty)
    }

    @Test(arguments: [
        ["--queue", "mysql://db.example/jobs", "--name", "mirror"],
        ["--queue", "postgresql://db.example:notaport/jobs", "--name", "mirror"],
        ["--queue", "postgresql://u:hunter2@db.example:99999/jobs", "--name", "mirror"],
        ["--queue", "jobs", "--name", "mirror"],
        ["--queue", "postgresql://db.example/jobs"],
        ["--queue", "postgresql://db.example/jobs", "--name", ""],
        ["--name", "mirror"],
    ])
    func badQueueOptionsAreUsageErrors(_ extra: [String]) async throws {
        let run = try await DLPipeRun.run(["run", try jobFile(), "-d", out] + extra)
        #expect(run.status == 2, "\(extra): \(run.stderr)")
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 2, "\(run.stderr)")
        #expect(lines.last?.contains("--help") == true)
        #expect(!run.stderr.contains("hunter2"))
        try expectNothingDone(run)
    }

    @Test func theEnvironmentVariableNeedsANameToo() async throws {
        let run = try await DLPipeRun.run(
            ["run", try jobFile(), "-d", out], environment: ["DLPIPE_QUEUE": "postgresql://db.example/jobs"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("DLPIPE_QUEUE") && run.stderr.contains("--name"), "\(run.stderr)")
        try expectNothingDone(run)
    }

    @Test func aBadQueueInTheJobIsALoadErrorWithItsLine() async throws {
        let run = try await DLPipeRun.run(["run", try jobFile(config: "dl.config{ queue = 'redis://cache/0' }\n"), "-d", out, "--name", "m"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("job.lua:1: dl.config: queue:"), "\(run.stderr)")
        try expectNothingDone(run)
    }

    @Test func anUnreachableDatabaseIsOneLineAndExitFour() async throws {
        let missing = try TempDir.make("no-pg")
        let run = try await DLPipeRun.run(
            ["run", try jobFile(), "-d", out, "--queue", "postgresql://worker:hunter2@/jobs?host=\(missing)", "--name", "mirror"])
        #expect(run.status == 4, "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        #expect(run.stderr.hasPrefix("dlpipe: cannot reach the queue: cannot connect to postgresql://worker:***@/jobs"), "\(run.stderr)")
        #expect(!run.stderr.contains("hunter2"))
        try expectNothingDone(run)
    }

    /// A server that answers and refuses: still exit 4 at start (the worker
    /// cannot reach its queue), and the line says what is wrong.
    @Test func aMissingDatabaseIsSaidSo() async throws {
        let url = try PostgresCluster.shared().freshDatabase("cli")
        let missing = url.replacingOccurrences(of: "/cli_", with: "/nosuch_")
        for command in [["run", try jobFile(), "-d", out, "--name", "mirror"], ["status", "--name", "mirror"]] {
            let run = try await DLPipeRun.run(command + ["--queue", missing])
            #expect(run.status == 4, "\(run.stderr)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
            #expect(run.stderr.hasPrefix("dlpipe: cannot reach the queue: the database does not exist (SQLSTATE 3D000): cannot connect to "), "\(run.stderr)")
        }
        try expectNothingDone(try await DLPipeRun.run(["run", try jobFile(), "-d", out, "--name", "m", "--queue", missing]))
    }

    /// A role whose connection limit is below the connections a worker keeps
    /// (six: state, worker, adds, heartbeat, listen, parts) is refused at
    /// start, every connection opened before anything is done: exit 4 within
    /// seconds with the server's reason on one line, no request, no file and
    /// nothing in the database (the trial's worker waited 60 s for the last
    /// ones, then said "unreachable"). With six the job runs, and the worker
    /// leaves on a connection it has (the job's row says it left).
    @Test(arguments: [1, 3, 5, 6])
    func aRoleConnectionLimitBelowAWorkersIsToldAtStart(_ limit: Int) async throws {
        let url = try PostgresCluster.shared().freshDatabase("limit")
        let database = String(url.split(separator: "@/")[1].split(separator: "?")[0])
        let admin = try PostgresConnection(PostgresAddress(url))
        let role = "lim\(limit)_\(UInt32.random(in: 0...UInt32.max))"
        try admin.run("CREATE ROLE \(role) LOGIN CONNECTION LIMIT \(limit); GRANT CREATE ON DATABASE \(database) TO \(role)")
        let address = url.replacingOccurrences(of: "\(PostgresCluster.user)@", with: "\(role)@")
        let run = try await DLPipeRun.run(["run", try jobFile(), "-d", out, "--name", "mirror", "--settle", "0", "--queue", address])
        let schemas = try admin.execute("SELECT count(*) AS n FROM pg_namespace WHERE nspname = 'dlpipe'").rows.first?.int("n")
        if limit >= 6 {
            #expect(run.status == 0, "\(run.stderr)")
            #expect(listing(out) == ["a.bin"])
            let left = try admin.execute("SELECT count(*) AS n FROM dlpipe.workers WHERE stop_reason = 'left'").rows.first?.int("n")
            #expect(left == 1, "the worker left on one of its own connections")
            return
        }
        #expect(run.status == 4, "\(run.stderr)")
        #expect(run.seconds < 10, "refused at once, not after an outage's wait: \(run.seconds) s")
        #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        #expect(run.stderr.hasPrefix("dlpipe: cannot reach the queue: the server has no connection left for this role (max_connections or the role's limit) (SQLSTATE 53300): "), "\(run.stderr)")
        #expect(schemas == 0, "nothing was made in the database")
        try expectNothingDone(run)
    }

    /// A database that answers, given each of the three ways: the job runs
    /// as a worker of the queue (one worker alone: the whole job).
    @Test(arguments: ["option", "environment", "config"])
    func aReachableQueueRunsTheJob(_ way: String) async throws {
        let url = try PostgresCluster.shared().freshDatabase("cli")
        let path = try jobFile(config: way == "config" ? "dl.config{ queue = '\(url)' }\n" : "")
        let run = try await DLPipeRun.run(
            ["run", path, "-d", out, "--name", "mirror", "--settle", "0"] + (way == "option" ? ["--queue", url] : []),
            environment: way == "environment" ? ["DLPIPE_QUEUE": url] : [:])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(listing(out) == ["a.bin"])
        #expect(try server.requests(matching: "/files/a.bin").count == 1)
    }

    @Test func leaseAndSettleNeedAQueue() async throws {
        let run = try await DLPipeRun.run(["run", try jobFile(), "-d", out, "--lease", "10"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("--lease, --settle and --follow are settings of a shared queue"), "\(run.stderr)")
        try expectNothingDone(run)
    }

    @Test(arguments: ["1", "86401", "1e12"])
    func aLeaseOutsideTwoSecondsToADayIsAUsageError(_ lease: String) async throws {
        let run = try await DLPipeRun.run(
            ["run", try jobFile(), "-d", out, "--queue", "postgresql://db.example/jobs", "--name", "m", "--lease", lease])
        #expect(run.status == 2)
        #expect(run.stderr.contains("--lease wants a number of seconds from 2 to 86400"), "\(run.stderr)")
        try expectNothingDone(run)
    }

    @Test func withoutAQueueNothingChanges() async throws {
        let run = try await DLPipeRun.run(["run", try jobFile(), "-d", out], environment: ["DLPIPE_QUEUE": ""])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(listing(out).contains("a.bin"))
    }
}
