import Foundation
import Testing

/// Cron-grade re-runs: conditional requests, resume across processes, refresh
/// policies, dlpipe status, and state files that cannot be used.
@Suite struct StateTests {
    let server: FaultServer
    let out: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("state")
    }

    @Test func aReRunAsksConditionallyAndReceivesNoBody() async throws {
        let a = try server.put("a.bin", randomBytes: 100_000, seed: 1)
        try server.put("b.bin", randomBytes: 50_000, seed: 2)
        let urls = [server.url("/files/a.bin"), server.url("/files/b.bin")]
        let first = try await DLPipeRun.run(["get"] + urls + ["-d", out, "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        let second = try await DLPipeRun.run(["get"] + urls + ["-d", out, "--json"])
        #expect(second.status == 0, "\(second.stderr)")
        let finished = second.events("finished")
        #expect(finished.count == 2 && finished.allSatisfy { $0["unchanged"] as? Bool == true })
        #expect(second.events("done").first?["unchanged"] as? Int == 2)
        let requests = try server.requests(matching: "/files/")
        #expect(requests.count == 4)
        for request in requests.suffix(2) {
            let headers = request["headers"] as? [String: String] ?? [:]
            #expect(headers["if-none-match"] != nil, "asked with the ETag")
            #expect(headers["if-modified-since"] != nil)
        }
        #expect(listing(out) == ["a.bin", "b.bin"], "no a.1.bin: the state knows these files")
        #expect(sameBytes(out + "/a.bin", a))
    }

    @Test func aChangedResourceReplacesOurOwnFile() async throws {
        try server.put("c.bin", randomBytes: 10_000, seed: 1)
        let first = try await DLPipeRun.run(["get", server.url("/files/c.bin"), "-d", out])
        #expect(first.status == 0)
        let v2 = try server.put("c.bin", randomBytes: 12_000, seed: 9)
        let second = try await DLPipeRun.run(["get", server.url("/files/c.bin"), "-d", out, "--json"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.events("finished").first?["unchanged"] as? Bool == false)
        #expect(listing(out) == ["c.bin"])
        #expect(sameBytes(out + "/c.bin", v2))
    }

    @Test func refreshNeverMakesNoRequestAndAlwaysFetchesAgain() async throws {
        try server.put("n.txt", bytes: Array("n".utf8))
        let job = try LuaJob()
        try job.write("never.lua", "dl.config{ refresh = 'never' }\ndl.add(dl.var.url)\n")
        try job.write("always.lua", "dl.config{ refresh = 'always' }\ndl.add(dl.var.url)\n")
        let url = server.url("/files/n.txt")
        _ = try await job.run("never.lua", out: out, ["--var", "url=\(url)"])
        let never = try await job.run("never.lua", out: out, ["--var", "url=\(url)"])
        #expect(never.status == 0)
        #expect(never.events("finished").first?["unchanged"] as? Bool == true)
        #expect(try server.requests(matching: "/files/n.txt").count == 1, "never: no request for a finished file")
        let always = try await job.run("always.lua", out: out, ["--var", "url=\(url)"])
        #expect(always.status == 0)
        let last = try server.requests(matching: "/files/n.txt").last?["headers"] as? [String: String] ?? [:]
        #expect(last["if-none-match"] == nil, "always: a plain request")
        #expect(listing(out) == ["n.txt"])
    }

    @Test func aKilledRunIsResumedByTheNextWithARange() async throws {
        let data = try server.put("big.bin", randomBytes: 600_000)
        let url = server.url("/files/big.bin?stall=200000&stall_times=1")
        let first = try Subprocess(Paths.binary, ["get", url, "-d", out, "--json"])
        #expect(await killedAfterProgress(first) == 128 + SIGKILL)
        #expect(listing(out) == ["big.bin.part"])
        let second = try await DLPipeRun.run(["get", url, "-d", out, "--json"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(sameBytes(out + "/big.bin", data))
        #expect(listing(out) == ["big.bin"])
        let resumed = try server.requests(matching: "/files/big.bin").last?["headers"] as? [String: String] ?? [:]
        #expect(resumed["range"]?.hasPrefix("bytes=") == true, "resumed, not fetched again")
        #expect(resumed["range"] != "bytes=0-")
        #expect(resumed["if-range"] != nil)
    }

    /// After `kill -9` mid-body the state's record still has the bytes of its
    /// last save; status reports the part file's size, which the next run resumes from.
    @Test func statusAfterAKillReportsThePartFilesBytes() async throws {
        try server.put("big.bin", randomBytes: 1_000_000)
        let url = server.url("/files/big.bin?stall=360000&stall_times=1")
        let first = try Subprocess(Paths.binary, ["get", url, "-d", out, "--json"])
        #expect(await killedAfterProgress(first) == 128 + SIGKILL)
        let onDisk = Int64(bytes(at: out + "/big.bin.part").count)
        #expect(onDisk > 0)
        let json = try await DLPipeRun.run(["status", out, "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        let download = (object?["downloads"] as? [[String: Any]])?.first
        #expect(download?["status"] as? String == "partial")
        #expect((download?["bytes"] as? NSNumber)?.int64Value == onDisk, "\(json.stdout)")
        let text = try await DLPipeRun.run(["status", out])
        #expect(text.stdout.contains("partial:\n  big.bin: "), "\(text.stdout)")
        #expect(!text.stdout.contains("big.bin: 0 B"), "\(text.stdout)")
    }

    @Test func statusOnAnEmptyAndAFilledDirectory() async throws {
        let empty = try await DLPipeRun.run(["status", out])
        #expect(empty.status == 0)
        #expect(empty.stdout.contains("no dlpipe state"))
        #expect(!FileManager.default.fileExists(atPath: out + "/.dlpipe/state.db"), "status creates nothing")
        try server.put("ok.txt", bytes: Array("ok".utf8))
        let get = try await DLPipeRun.run(["get", server.url("/files/ok.txt"), server.url("/files/gone.txt"), "-d", out])
        // The line names the URL once: "URL: HTTP 404 from URL" said it twice.
        let gone = server.url("/files/gone.txt")
        #expect(get.stderr.contains("failed \(gone): HTTP 404 [2, http]"), "\(get.stderr)")
        let text = try await DLPipeRun.run(["status", out])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("downloads: 1 finished, 1 failed"), "\(text.stdout)")
        #expect(text.stdout.contains("  \(gone): http: HTTP 404 (attempts: 1)\n"), "\(text.stdout)")
        #expect(text.stdout.contains("runs:\n  #1 "))
        let json = try await DLPipeRun.run(["status", out, "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(object?["finished"] as? Int == 1 && object?["failed"] as? Int == 1)
        #expect((object?["downloads"] as? [Any])?.count == 2)
    }

    /// A mistyped folder is not "nothing has run here": it is a usage error
    /// (exit 2) that says so, and nothing is created.
    @Test func statusOfAFolderThatDoesNotExistSaysSoAndExitsTwo() async throws {
        let missing = out + "/no-such-folder"
        let run = try await DLPipeRun.run(["status", missing])
        #expect(run.status == 2, "\(run.stdout) \(run.stderr)")
        #expect(run.stderr.contains("\(missing): no such directory"), "\(run.stderr)")
        #expect(!run.stdout.contains("no dlpipe state"))
        #expect(!FileManager.default.fileExists(atPath: missing))
        let json = try await DLPipeRun.run(["status", missing, "--json"])
        #expect(json.status == 2 && json.stdout.isEmpty)
        try Data("x".utf8).write(to: URL(fileURLWithPath: out + "/file"))
        let file = try await DLPipeRun.run(["status", out + "/file"])
        #expect(file.status == 2 && file.stderr.contains("not a directory"), "\(file.stderr)")
    }

    /// Queue workers keep their part files under `.dlpipe/queue/JOB/` and their
    /// state in the queue's database: status of their directory says where to look.
    @Test func statusOfAQueueWorkersDirectoryPointsToTheQueue() async throws {
        try FileManager.default.createDirectory(atPath: out + "/.dlpipe/queue/7", withIntermediateDirectories: true)
        let status = try await DLPipeRun.run(["status", out])
        #expect(status.status == 0, "\(status.stderr)")
        // Downloads ran here, a queue's: not "no download has run here".
        #expect(status.stdout.hasPrefix("\(out): no dlpipe state of its own (the downloads here are a shared queue's, kept in its database)\n"), "\(status.stdout)")
        #expect(!status.stdout.contains("no download has run here"), "\(status.stdout)")
        // No worker holds the job folder's `active` file: its workers wrote here before.
        #expect(status.stdout.contains("shared queue: workers of queue job 7 wrote here;"), "\(status.stdout)")
        #expect(status.stdout.contains("dlpipe status --queue URL --name NAME"), "\(status.stdout)")
        // A worker holds it (shared, as every worker of a job does): they write here now.
        try FileManager.default.createDirectory(atPath: out + "/.dlpipe/queue/8", withIntermediateDirectories: true)
        let held = open(out + "/.dlpipe/queue/8/active", O_RDWR | O_CREAT, 0o600)
        #expect(held >= 0 && flock(held, LOCK_SH) == 0)
        defer { close(held) }
        let busy = try await DLPipeRun.run(["status", out])
        #expect(busy.stdout.contains("shared queue: workers of queue job 8 write here now, those of queue job 7 wrote here;"), "\(busy.stdout)")
        // Folders that record their job's --name (workers write it) are named by it.
        try Data("mirror\n".utf8).write(to: URL(fileURLWithPath: out + "/.dlpipe/queue/7/name"))
        let named = try await DLPipeRun.run(["status", out])
        #expect(named.stdout.contains("those of queue job 7 (\"mirror\") wrote here;"), "\(named.stdout)")
        // Job 8 records none: the command still asks for the name.
        #expect(named.stdout.contains("--name NAME"), "\(named.stdout)")
        try Data("it's mine\n".utf8).write(to: URL(fileURLWithPath: out + "/.dlpipe/queue/8/name"))
        try Data("it's mine\n".utf8).write(to: URL(fileURLWithPath: out + "/.dlpipe/queue/7/name"))
        let one = try await DLPipeRun.run(["status", out])
        #expect(one.stdout.contains("workers of queue job 8 (\"it's mine\") write here now"), "\(one.stdout)")
        // --json says it too: a script must not read the directory as idle.
        let json = try await DLPipeRun.run(["status", out, "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        let jobs = object?["shared_queue"] as? [[String: Any]]
        #expect(jobs?.map { "\($0["job"] ?? "") \($0["name"] ?? "") \($0["writing_now"] ?? "")" } == ["7 it's mine 0", "8 it's mine 1"], "\(json.stdout)")
        #expect(object?["state"] is NSNull && object?["running_pid"] is NSNull, "\(json.stdout)")
        // One name for all: the command to copy, quoted for the shell.
        #expect(one.stdout.contains("dlpipe status --queue URL --name 'it'\\''s mine'"), "\(one.stdout)")
        // A file that is no name a worker wrote (no newline) names nothing.
        try Data("half".utf8).write(to: URL(fileURLWithPath: out + "/.dlpipe/queue/7/name"))
        let unreadable = try await DLPipeRun.run(["status", out])
        #expect(unreadable.stdout.contains("those of queue job 7 wrote here;") && unreadable.stdout.contains("--name NAME"), "\(unreadable.stdout)")
        // The directory is shared: a FIFO under the name hangs nothing, and a
        // name's control characters never reach the terminal.
        try FileManager.default.removeItem(atPath: out + "/.dlpipe/queue/7/name")
        #expect(mkfifo(out + "/.dlpipe/queue/7/name", 0o600) == 0)
        try Data("\u{1B}[31mred\n".utf8).write(to: URL(fileURLWithPath: out + "/.dlpipe/queue/8/name"))
        // Within seconds: a FIFO opened for reading would wait for a writer forever.
        let probe = try Subprocess(Paths.binary, ["status", out], environment: ["NO_COLOR": "1"], timeout: 20)
        let hostile = await offThePool { () -> (status: Int32, stdout: String, stderr: String) in probe.finish() }
        #expect(hostile.status == 0, "\(hostile.stderr)")
        #expect(hostile.stdout.contains("workers of queue job 8 (\"\\x1b[31mred\") write here now, those of queue job 7 wrote here;"), "\(hostile.stdout)")
        #expect(!hostile.stdout.contains("\u{1B}") && hostile.stdout.contains("--name NAME"), "\(hostile.stdout)")
        // Without such a folder, no such line.
        let plain = try await DLPipeRun.run(["status", try TempDir.make("plain")])
        #expect(!plain.stdout.contains("shared queue"), "\(plain.stdout)")
    }

    @Test func statusOfABusyDirectoryNamesTheRun() async throws {
        try server.put("big.bin", randomBytes: 300_000)
        let running = try Subprocess(Paths.binary, ["get", server.url("/files/big.bin?stall=100000"), "-d", out, "--json", "--timeout", "300"])
        #expect(await offThePool { running.waitForLine(containing: "\"progress\"") }, "the run ended before its first progress")
        let status = try await DLPipeRun.run(["status", out])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.contains("running: process \(running.pid)"), "\(status.stdout)")
        #expect(status.stdout.contains("partial:\n  big.bin: "), "\(status.stdout)")
        running.signal(SIGTERM)
        let ended = await offThePool { running.finish() }
        #expect(ended.status == 130, "\(ended.stderr)")
    }

    /// A state kept elsewhere (`--state FILE`) is locked by `FILE.lock`: status
    /// with the same `--state` sees the run holding it; the directory's own
    /// lock is not taken by that run.
    @Test func statusWithAStateElsewhereChecksThatStatesLock() async throws {
        try server.put("big.bin", randomBytes: 300_000)
        let elsewhere = try TempDir.make("state-elsewhere")
        defer { try? FileManager.default.removeItem(atPath: elsewhere) }
        let state = elsewhere + "/run.db"
        // The stall must outlast this test on a loaded machine: the default
        // 30 s timeout would end it with a resume that finishes the file.
        let running = try Subprocess(
            Paths.binary,
            ["get", server.url("/files/big.bin?stall=100000"), "-d", out, "--state", state, "--json", "--timeout", "300"])
        #expect(await offThePool { running.waitForLine(containing: "\"progress\"") }, "no progress event")
        #expect(FileManager.default.fileExists(atPath: state + ".lock"))
        let status = try await DLPipeRun.run(["status", out, "--state", state])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.contains("running: process \(running.pid)"), "\(status.stdout)")
        let own = try await DLPipeRun.run(["status", out])
        #expect(!own.stdout.contains("running:"), "the directory's lock is free: \(own.stdout)")
        running.signal(SIGTERM)
        #expect(await offThePool { running.waitForExit() } == 130)
        let after = try await DLPipeRun.run(["status", out, "--state", state])
        #expect(after.status == 0 && !after.stdout.contains("running:"), "\(after.stdout)")
    }

    @Test(arguments: ["garbage", "foreign"])
    func aStateFileThatCannotBeUsedIsAClearErrorAndIsKept(_ kind: String) async throws {
        try server.put("x.txt", bytes: Array("x".utf8))
        try FileManager.default.createDirectory(atPath: out + "/.dlpipe", withIntermediateDirectories: true)
        let path = out + "/.dlpipe/state.db"
        if kind == "garbage" {
            try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
        } else {
            let sqlite = try Subprocess("/usr/bin/env", ["python3", "-c", "import sqlite3; c = sqlite3.connect('\(path)'); c.execute('create table photos(id)'); c.commit()"])
            #expect(sqlite.finish().status == 0)
        }
        let before = sha256Hex(bytes(at: path))
        let run = try await DLPipeRun.run(["get", server.url("/files/x.txt"), "-d", out])
        #expect(run.status == 1)
        #expect(run.stderr.contains(path), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1)
        #expect(sha256Hex(bytes(at: path)) == before, "nothing deleted or changed")
        #expect(try server.requests(matching: "/files/").isEmpty)
        let status = try await DLPipeRun.run(["status", out])
        #expect(status.status == 1 && status.stderr.contains(path))
    }

    /// The run lock is truncated and given the run's PID: planted as a
    /// symlink (a directory others may write into), it used to destroy the
    /// file it pointed to. It is refused instead, and nothing is fetched.
    @Test(arguments: ["symlink", "fifo"])
    func aRunLockThatIsNoFileOfItsOwnIsRefused(_ kind: String) async throws {
        try server.put("x.txt", bytes: Array("x".utf8))
        try FileManager.default.createDirectory(atPath: out + "/.dlpipe", withIntermediateDirectories: true)
        let victim = try TempDir.make("lock-victim") + "/precious.txt"
        try Data("precious\n".utf8).write(to: URL(fileURLWithPath: victim))
        let lock = out + "/.dlpipe/lock"
        if kind == "symlink" {
            try FileManager.default.createSymbolicLink(atPath: lock, withDestinationPath: victim)
        } else {
            #expect(mkfifo(lock, 0o600) == 0)
        }
        let run = try await DLPipeRun.run(["get", server.url("/files/x.txt"), "-d", out])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains(lock) && run.stderr.contains(kind == "symlink" ? "is a symbolic link" : "is not a regular file"), "\(run.stderr)")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n", "the file the link points to is untouched")
        #expect(try server.requests(matching: "/files/").isEmpty)
        // Status reads no holder from it, and waits on nothing.
        let probe = try Subprocess(Paths.binary, ["status", out], environment: ["NO_COLOR": "1"], timeout: 20)
        let status = await offThePool { () -> (status: Int32, stdout: String, stderr: String) in probe.finish() }
        #expect(status.status == 0 && !status.stdout.contains("running:"), "\(status.stdout) \(status.stderr)")
    }

    /// A `.dlpipe` of another user's, or a symlink of theirs to a folder of
    /// this user's: dlpipe would write its state and locks where they chose.
    /// Refused (exit 1, one line), nothing fetched, nothing written there. A
    /// symlink of this user's own (the state moved to another disk) is used.
    @Test(arguments: ["folder", "link", "own link"])
    func aStateFolderOfAnotherUsersIsRefused(_ kind: String) async throws {
        guard getuid() == 0 else { return }  // giving a file away takes root
        try server.put("x.txt", bytes: Array("x".utf8))
        let folder = out + "/.dlpipe"
        let elsewhere = try TempDir.make("state-elsewhere")
        switch kind {
        case "folder":
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            #expect(chown(folder, 65534, 65534) == 0)
        default:
            try FileManager.default.createSymbolicLink(atPath: folder, withDestinationPath: elsewhere)
            if kind == "link" { #expect(lchown(folder, 65534, 65534) == 0) }
        }
        let run = try await DLPipeRun.run(["get", server.url("/files/x.txt"), "-d", out])
        if kind == "own link" {
            #expect(run.status == 0, "\(run.stderr)")
            #expect(FileManager.default.fileExists(atPath: elsewhere + "/state.db"), "the state went where the user's link points")
            return
        }
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        #expect(run.stderr.contains(kind == "folder" ? "\(folder) belongs to another user (uid 65534)" : "\(folder) is a symbolic link of another user's (uid 65534)"), "\(run.stderr)")
        #expect(try server.requests(matching: "/files/").isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: kind == "folder" ? folder : elsewhere).isEmpty, "nothing written there")
    }

    @Test func aUsersFileAfterAFailedDownloadIsNotOverwritten() async throws {
        let data = try server.put("u.bin", randomBytes: 20_000)
        let url = server.url("/files/u.bin?truncate=1000&truncate_times=1")
        let failed = try await DLPipeRun.run(["get", url, "-d", out, "--retries", "0"])
        #expect(failed.status == 1)
        try Data("USERDATA".utf8).write(to: URL(fileURLWithPath: out + "/u.bin"))
        let second = try await DLPipeRun.run(["get", url, "-d", out])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(sameBytes(out + "/u.bin", Array("USERDATA".utf8)))
        #expect(sameBytes(out + "/u.1.bin", data), "resumed from the kept part file, beside the user's file")
    }

    @Test func aPartFileAtFullLengthStartsOver() async throws {
        let data = try server.put("w.bin", randomBytes: 300_000)
        let url = server.url("/files/w.bin?stall=100000&stall_times=1")
        let first = try Subprocess(Paths.binary, ["get", url, "-d", out, "--json"])
        await killedAfterProgress(first)
        // As if killed between the batch sync and the rename: whole, but garbage.
        try Data(repeating: 0x5A, count: 300_000).write(to: URL(fileURLWithPath: out + "/w.bin.part"))
        let second = try await DLPipeRun.run(["get", url, "-d", out, "--retries", "0"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(sameBytes(out + "/w.bin", data))
        let last = try server.requests(matching: "/files/w.bin").last?["headers"] as? [String: String] ?? [:]
        #expect(last["range"] == nil, "nothing left to resume: a plain request")
    }

    /// Kills `process` at its first progress event, on the thread that saw the
    /// event: a hop back to the test pool first could come after the stall's end.
    @discardableResult
    private func killedAfterProgress(_ process: Subprocess) async -> Int32 {
        await offThePool {
            process.waitForLine(containing: "\"progress\"")
            process.signal(SIGKILL)
            return process.waitForExit()
        }
    }
}
