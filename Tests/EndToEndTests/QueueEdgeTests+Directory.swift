@testable import DLPipe
@testable import DLPipeQueue
import Foundation
import Testing
import TestSupport

/// Two jobs (two `--name`s) in one output directory take each other's file
/// names (a trial found its files doubled as name.1.ext, and no word of
/// it): a worker refuses a directory that another job's workers write into
/// now (exit 3, as a run without the queue on a busy directory), and takes
/// it once they are gone. (QueueEdgeTests' server, job folder and output directory.)
extension QueueEdgeTests {
    @Test func aSecondJobInABusyDirectoryIsRefusedUntilTheFirstIsGone() async throws {
        let queue = try PostgresCluster.shared().freshDatabase("dir")
        // Job "first" holds one download that stalls after 50 KB until its client
        // goes (--timeout 300: the default 30 s ran out on a loaded machine).
        try server.put("big.bin", randomBytes: 500_000)
        let first = try job.write("first.lua", "dl.add('\(server.url("/files/big.bin?stall=50000&stall_times=1"))')\n")
        try server.put("b.bin", randomBytes: 300)
        let second = try job.write("second.lua", "dl.add('\(server.url("/files/b.bin"))')\n")
        let worker = try Subprocess(
            Paths.binary, ["run", first, "-d", out, "--queue", queue, "--name", "first", "--settle", "0", "--json", "--timeout", "300"], timeout: 180)
        let busy = await offThePool { worker.waitForLine(containing: "\"bytes\":50000,") }
        #expect(busy)
        // The first job's folder names it, and so does status of the directory.
        let folders = try FileManager.default.contentsOfDirectory(atPath: out + "/.dlpipe/queue")
        #expect(folders.map { QueueWorker.recordedJobName(inFolder: out + "/.dlpipe/queue/\($0)") } == ["first"], "\(folders)")
        let status = try await DLPipeRun.run(["status", out])
        #expect(status.stdout.contains("workers of queue job \(folders.first ?? "") (\"first\") write here now"), "\(status.stdout)")
        #expect(status.stdout.contains("dlpipe status --queue URL --name first"), "\(status.stdout)")
        let refused = try await DLPipeRun.run(["run", second, "-d", out, "--queue", queue, "--name", "second", "--settle", "0"])
        #expect(refused.status == 3, "\(refused.stderr)")
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("another job's workers write into \(out) now: \"first\" (queue job "), "\(refused.stderr)")
        #expect(refused.stderr.contains("Give each job its own -d"), "\(refused.stderr)")
        #expect(try server.requests(matching: "/files/b.bin").isEmpty)
        // It took back the folder it made for its claim: the directory names one job.
        #expect(try FileManager.default.contentsOfDirectory(atPath: out + "/.dlpipe/queue") == folders)
        let statusAfter = try await DLPipeRun.run(["status", out])
        #expect(!statusAfter.stdout.contains("\"second\""), "\(statusAfter.stdout)")
        // The refused worker opened no run: none ended with 130 in the second job's history.
        #expect(try runCount(queue, job: "second") == 0)
        // A second worker of the same job is welcome (it finds nothing to claim and ends with the run).
        let stopped = await offThePool { () -> (status: Int32, stdout: String, stderr: String) in
            worker.signal(SIGTERM)
            return worker.finish()
        }
        #expect(stopped.status == 130, "\(stopped.stderr)")
        // The first job's workers are gone: the second job takes the directory.
        let later = try await DLPipeRun.run(["run", second, "-d", out, "--queue", queue, "--name", "second", "--settle", "0"])
        #expect(later.status == 0, "\(later.stderr)")
        #expect(listing(out) == ["b.bin"])
    }

    @Test func workersOfOneJobShareTheDirectory() async throws {
        let queue = try PostgresCluster.shared().freshDatabase("dir-same")
        try server.put("big.bin", randomBytes: 500_000)
        let path = try job.write("job.lua", "dl.add('\(server.url("/files/big.bin?stall=50000&stall_times=1"))')\n")
        // A stall never times out here (30 s by default, which a loaded machine reached).
        let arguments = ["run", path, "-d", out, "--queue", queue, "--name", "same", "--settle", "0", "--timeout", "300"]
        let worker = try Subprocess(Paths.binary, arguments + ["--json"], timeout: 180)
        let busy = await offThePool { worker.waitForLine(containing: "\"bytes\":50000,") }
        #expect(busy)
        // Another worker of the same job joins: no refusal, it waits for the run with the first.
        let joining = try Subprocess(Paths.binary, arguments, timeout: 180)
        let (beating, first, second) = await offThePool { () -> (Bool, (status: Int32, stdout: String, stderr: String), (status: Int32, stdout: String, stderr: String)) in
            // Its first heartbeat after registering comes from its running
            // threads, which start only past the directory's check.
            let connection = try? PostgresConnection(PostgresAddress(queue))
            let deadline = Date().addingTimeInterval(30)
            var beating = false
            while !beating && Date() < deadline {
                beating = !((try? connection?.execute(
                    "SELECT 1 FROM dlpipe.workers WHERE pid = $1 AND heartbeat_at > started_at AND stopped_at IS NULL",
                    [.int(Int64(joining.pid))]).rows.isEmpty) ?? true)
                if !beating { usleep(50_000) }
            }
            worker.signal(SIGTERM)
            return (beating, worker.finish(), joining.finish())
        }
        #expect(beating, "the joining worker never started")
        #expect(first.status == 130, "\(first.stderr)")
        #expect(!second.stderr.contains("another job"), "\(second.stderr)")
        #expect(second.status == 0, "\(second.stderr)")
    }

    /// Workers of one job given different directories would each place
    /// their share of the files in their own, under one shared state: a
    /// worker whose directory does not hold the token the job's live workers
    /// found in theirs is refused (exit 3) before any request, and takes its
    /// directory for the job once they have ended.
    @Test func aWorkerGivenAnotherDirectoryIsRefusedWhileTheJobsWorkersLive() async throws {
        let queue = try PostgresCluster.shared().freshDatabase("dir-other")
        let elsewhere = try TempDir.make("queue-elsewhere")
        try server.put("big.bin", randomBytes: 500_000)
        let path = try job.write("moving.lua", "dl.add('\(server.url("/files/big.bin?stall=50000&stall_times=1"))')\n")
        let arguments = ["run", path, "--queue", queue, "--name", "moving", "--settle", "0", "--timeout", "300"]
        let worker = try Subprocess(Paths.binary, arguments + ["-d", out, "--json"], timeout: 180)
        let busy = await offThePool { worker.waitForLine(containing: "\"bytes\":50000,") }
        #expect(busy)
        let perHost = try jobPerHost(queue, job: "moving")
        // Refused with a limit of its own: the job keeps its live worker's.
        let refused = try await DLPipeRun.run(arguments + ["-d", elsewhere, "--per-host", "\(perHost + 5)"])
        #expect(refused.status == 3, "\(refused.stderr)")
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        #expect(try jobPerHost(queue, job: "moving") == perHost, "a refused worker changed the job's per_host")
        #expect(refused.stderr.contains("1 other worker of job \"moving\" writes into another directory than \(elsewhere)"), "\(refused.stderr)")
        #expect(refused.stderr.contains("every worker of a job needs the same -d"), "\(refused.stderr)")
        #expect(try server.requests(matching: "/files/big.bin").count == 1, "the refused worker asked for nothing")
        #expect(listing(elsewhere).isEmpty)
        // Nor a job folder: `dlpipe status` of that directory lists no job that wrote there.
        #expect(!FileManager.default.fileExists(atPath: elsewhere + "/.dlpipe/queue"))
        let statusElsewhere = try await DLPipeRun.run(["status", elsewhere])
        #expect(!statusElsewhere.stdout.contains("wrote here"), "\(statusElsewhere.stdout)")
        // It joined no run: the job's history holds the first worker's alone.
        #expect(try runCount(queue, job: "moving") == 1)

        let stopped = await offThePool { () -> (status: Int32, stdout: String, stderr: String) in
            worker.signal(SIGTERM)
            return worker.finish()
        }
        #expect(stopped.status == 130, "\(stopped.stderr)")
        // Nobody writes into the first directory now: the job moves. Two
        // workers that start together there both go (each counted the other,
        // not yet checked, as writing elsewhere, and both were refused).
        let movers = try (0..<2).map { _ in try Subprocess(Paths.binary, arguments + ["-d", elsewhere], timeout: 120) }
        let moved = await offThePool { movers.map { $0.finish() } }
        for run in moved { #expect(run.status == 0, "\(run.stderr)") }
        #expect(listing(elsewhere) == ["big.bin"])
        let folders = try FileManager.default.contentsOfDirectory(atPath: elsewhere + "/.dlpipe/queue")
        let tokens = folders.compactMap { QueueWorker.readDirectoryToken(elsewhere + "/.dlpipe/queue/\($0)/directory") }
        #expect(tokens.count == 1, "the job's token is in its new directory: \(folders)")

        // The first directory still holds the job's old token: while a worker
        // lives in the new one, a worker there is told that it holds another one.
        try server.put("big2.bin", randomBytes: 500_000)
        let later = try job.write("moving2.lua", "dl.add('\(server.url("/files/big2.bin?stall=50000&stall_times=1"))')\n")
        let laterArguments = ["run", later, "--queue", queue, "--name", "moving", "--settle", "0", "--timeout", "300"]
        let mover = try Subprocess(Paths.binary, laterArguments + ["-d", elsewhere, "--json", "--per-host", "5"], timeout: 180)
        #expect(await offThePool { mover.waitForLine(containing: "\"bytes\":50000,") })
        // A worker that joins sets the limits it was given; a refused one does not.
        #expect(try jobPerHost(queue, job: "moving") == 5)
        let back = try await DLPipeRun.run(laterArguments + ["-d", out, "--per-host", "9"])
        #expect(back.status == 3, "\(back.stderr)")
        #expect(try jobPerHost(queue, job: "moving") == 5, "a refused worker changed the job's per_host")
        #expect(back.stderr.contains("writes into another directory than \(out) (\(out)/.dlpipe/queue/"), "\(back.stderr)")
        #expect(back.stderr.contains("/directory holds another directory's token)"), "\(back.stderr)")
        let moverStopped = await offThePool { () -> Int32 in
            mover.signal(SIGTERM)
            return mover.finish().status
        }
        #expect(moverStopped == 130)
    }

    /// The job folder is in the shared directory, which others may write
    /// into: FIFOs put under its files' names (the token, the name, another
    /// job's lock) block no worker's start (each would have waited forever
    /// in an open), and the worker writes its own files anew over them; its
    /// lock as a symlink to a file elsewhere is refused, not written through.
    @Test func fifosAndSymlinksInTheJobFoldersHangAndHarmNothing() async throws {
        let queue = try PostgresCluster.shared().freshDatabase("dir-fifo")
        try server.put("small.bin", randomBytes: 100)
        let path = try job.write("fifo.lua", "dl.add('\(server.url("/files/small.bin"))')\n")
        let arguments = ["run", path, "-d", out, "--queue", queue, "--name", "fifo", "--settle", "0"]
        let first = try await DLPipeRun.run(arguments)
        #expect(first.status == 0, "\(first.stderr)")
        let jobs = out + "/.dlpipe/queue"
        let folder = jobs + "/" + (try FileManager.default.contentsOfDirectory(atPath: jobs).first ?? "")
        for file in ["directory", "name"] {
            unlink(folder + "/" + file)
            #expect(mkfifo(folder + "/" + file, 0o600) == 0)
        }
        // Another job's folder whose lock is a FIFO: no worker of it lives.
        try FileManager.default.createDirectory(atPath: jobs + "/999999", withIntermediateDirectories: true)
        #expect(mkfifo(jobs + "/999999/active", 0o600) == 0)
        let again = try Subprocess(Paths.binary, arguments, timeout: 30)
        let second = await offThePool { () -> (status: Int32, stdout: String, stderr: String) in again.finish() }
        #expect(second.status == 0, "\(second.stderr)")
        #expect(QueueWorker.readDirectoryToken(folder + "/directory") != nil, "the token was written again")
        #expect(QueueWorker.recordedJobName(inFolder: folder) == "fifo")
        let status = try Subprocess(Paths.binary, ["status", out], timeout: 30)
        let shown = await offThePool { () -> (status: Int32, stdout: String, stderr: String) in status.finish() }
        #expect(shown.status == 0 && shown.stdout.contains("(\"fifo\"), 999999 wrote here"), "\(shown.stdout) \(shown.stderr)")
        // The job's own lock, a symlink to a file elsewhere: refused, the file kept.
        let victim = try TempDir.make("active-victim") + "/precious.txt"
        try Data("precious\n".utf8).write(to: URL(fileURLWithPath: victim))
        unlink(folder + "/active")
        try FileManager.default.createSymbolicLink(atPath: folder + "/active", withDestinationPath: victim)
        let third = try await DLPipeRun.run(arguments)
        #expect(third.status == 1 && third.stderr.contains(folder + "/active is a symbolic link"), "\(third.stderr)")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
    }

    /// A worker that cannot write the job's directory token (here its path
    /// is a folder; elsewhere a full or read-only disk) says so in one line
    /// and exits 1 before any request: without the token no other worker
    /// could tell this directory from another.
    @Test func aTokenThatCannotBeWrittenIsAClearError() async throws {
        let queue = try PostgresCluster.shared().freshDatabase("dir-token")
        try server.put("t.bin", randomBytes: 100)
        let path = try job.write("token.lua", "dl.add('\(server.url("/files/t.bin"))')\n")
        let arguments = ["run", path, "-d", out, "--queue", queue, "--name", "token", "--settle", "0"]
        #expect(try await DLPipeRun.run(arguments).status == 0)
        let jobs = out + "/.dlpipe/queue"
        let folder = jobs + "/" + (try FileManager.default.contentsOfDirectory(atPath: jobs).first ?? "")
        unlink(folder + "/directory")
        try FileManager.default.createDirectory(atPath: folder + "/directory/in-the-way", withIntermediateDirectories: true)
        try server.put("u.bin", randomBytes: 100)
        let other = try job.write("token2.lua", "dl.add('\(server.url("/files/u.bin"))')\n")
        let refused = try await DLPipeRun.run(["run", other, "-d", out, "--queue", queue, "--name", "token", "--settle", "0"])
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("cannot write the job's directory token") && refused.stderr.contains(folder + "/directory"), "\(refused.stderr)")
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        #expect(try server.requests(matching: "/files/u.bin").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: out + "/u.bin"))
        // The state folder of another user's (taking it takes root): refused before anything, as without the queue.
        guard getuid() == 0 else { return }
        #expect(chown(out + "/.dlpipe", 65534, 65534) == 0)
        let foreign = try await DLPipeRun.run(["run", other, "-d", out, "--queue", queue, "--name", "token", "--settle", "0"])
        #expect(foreign.status == 1 && foreign.stderr.contains("\(out)/.dlpipe belongs to another user (uid 65534)"), "\(foreign.stderr)")
        #expect(try server.requests(matching: "/files/u.bin").isEmpty)
    }

    /// The job-wide `per_host` of the job called `name`.
    private func jobPerHost(_ queue: String, job name: String) throws -> Int64 {
        try PostgresConnection(PostgresAddress(queue)).execute(
            "SELECT per_host FROM dlpipe.jobs WHERE name = $1", [.text(name)]
        ).rows[0].int("per_host")
    }

    /// How many runs the job called `name` has had.
    private func runCount(_ queue: String, job name: String) throws -> Int64 {
        try PostgresConnection(PostgresAddress(queue)).execute(
            "SELECT count(*) AS n FROM dlpipe.runs r JOIN dlpipe.jobs j ON j.id = r.job_id WHERE j.name = $1", [.text(name)]
        ).rows[0].int("n")
    }
}
