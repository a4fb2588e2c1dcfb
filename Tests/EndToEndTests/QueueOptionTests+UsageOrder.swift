import Foundation
import Testing
import TestSupport

/// `--name`, `--lease`, `--settle` and `--follow` without a queue are usage
/// errors that come before anything the job does: a trial saw the job's top
/// level print its lines (and open its state for `dl.store`) before the error.
/// Only the job's `dl.config{ queue }`, before its first effect, makes them right.
/// (QueueOptionTests' server, job folder and output directory.)
extension QueueOptionTests {
    /// A job whose top level shows itself at once: a printed line, a stored value, an add.
    private func eagerJob(_ before: String = "") throws -> String {
        try job.write("job.lua", before + """
            print("top level ran")
            dl.store.set("seen", true)
            dl.add('\(server.url("/files/a.bin"))')

            """)
    }

    private func expectRefusedFirst(_ run: DLPipeRun, saying text: String) throws {
        #expect(run.status == 2, "\(run.stderr)")
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 2 && lines.first?.hasPrefix("dlpipe: ") == true, "\(run.stderr)")
        #expect(lines.first?.contains(text) == true, "\(run.stderr)")
        #expect(lines.last?.contains("dlpipe run --help") == true)
        #expect(!run.stderr.contains("top level ran"))
        #expect(run.stdout.isEmpty)
        #expect(try server.requests(matching: "/").isEmpty)
        // dl.store did not open (and so create) the directory's state.
        #expect(!FileManager.default.fileExists(atPath: out + "/.dlpipe"), "\(listing(out))")
    }

    @Test(arguments: [
        (["--lease", "10"], "--lease, --settle and --follow are settings of a shared queue; give the queue too"),
        (["--settle", "0"], "--lease, --settle and --follow are settings of a shared queue; give the queue too"),
        (["--follow"], "--lease, --settle and --follow are settings of a shared queue; give the queue too"),
        (["--name", "mirror"], "--name names a job in a shared queue; give the queue too"),
        (["--no-queue", "--follow"], "turned off here (--no-queue)"),
        (["--queue", "", "--name", "mirror"], "turned off here (--queue '')"),
    ])
    func queueOptionsWithoutAQueueAreRefusedBeforeTheJobRuns(_ extra: [String], _ text: String) async throws {
        let run = try await DLPipeRun.run(["run", try eagerJob(), "-d", out] + extra, environment: ["DLPIPE_QUEUE": ""])
        try expectRefusedFirst(run, saying: text)
    }

    /// A job that catches the error with pcall is refused all the same.
    @Test func aCaughtRefusalStillEndsTheRun() async throws {
        let path = try job.write("job.lua", """
            local ok = pcall(dl.log, "first")
            pcall(dl.add, '\(server.url("/files/a.bin"))')
            print("top level ran", ok)

            """)
        let run = try await DLPipeRun.run(["run", path, "-d", out, "--follow"], environment: ["DLPIPE_QUEUE": ""])
        try expectRefusedFirst(run, saying: "--lease, --settle and --follow are settings of a shared queue")
    }

    /// The job's queue named after its first effect comes too late: the
    /// effect was refused (it would have run as without a queue).
    @Test func aQueueNamedAfterTheJobsFirstLineIsTooLate() async throws {
        let late = try job.write("late.lua", """
            print("top level ran")
            dl.config{ queue = 'postgresql://db.example/jobs' }

            """)
        let run = try await DLPipeRun.run(["run", late, "-d", out, "--name", "mirror"], environment: ["DLPIPE_QUEUE": ""])
        try expectRefusedFirst(run, saying: "--name names a job in a shared queue")
    }

    /// Named first, the job's queue makes the options right: the run goes on
    /// to the queue (here one that does not answer: exit 4, not a usage error).
    @Test func aQueueNamedFirstByTheJobTakesTheOptions() async throws {
        let missing = try TempDir.make("no-pg")
        let path = try eagerJob("dl.config{ queue = 'postgresql:///jobs?host=\(missing)' }\n")
        let run = try await DLPipeRun.run(
            ["run", path, "-d", out, "--name", "mirror", "--lease", "10"], environment: ["DLPIPE_QUEUE": ""])
        #expect(run.status == 4, "\(run.stderr)")
        #expect(run.stderr.contains("cannot reach the queue"), "\(run.stderr)")
        #expect(try server.requests(matching: "/").isEmpty)
    }
}
