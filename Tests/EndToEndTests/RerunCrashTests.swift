import DLPipe
import Foundation
import TestSupport
import Testing

/// kill -9 during runs that replace files an earlier run placed (refresh
/// "always", and a conditional re-run whose server sends changed files): after
/// every kill each final name holds a whole version of its file, the old one or
/// the new one, and nothing but part files of the job's names lies beside them;
/// never a numbered copy (issue 20: `k002.1.bin`, `k002.1.1.bin`, ... grew with
/// every kill). A clean run then leaves exactly the job's files, the newest
/// versions.
@Suite struct RerunCrashTests {
    /// The files of a job whose content changes between runs: version `v` of a
    /// file is 8 bytes naming its version and size and then a prefix of the file's
    /// own random bytes, so that every version is cheap to make and to tell apart.
    struct ChangingFiles {
        let server: FaultServer
        var sizes: [String: Int] = [:]
        private var pool: [String: [UInt8]] = [:]
        /// Every version served so far, per name: what a final name may hold.
        private(set) var served: [String: [[UInt8]]] = [:]
        private(set) var current: [String: [UInt8]] = [:]

        init(server: FaultServer) { self.server = server }

        mutating func add(_ name: String, maxSize: Int, seed: UInt64) {
            pool[name] = TestData.random(maxSize, seed: seed)
        }

        /// Serves version `version` of `name`, `size` bytes long.
        mutating func serve(_ name: String, version: UInt32, size: Int) throws {
            let bytes = withUnsafeBytes(of: (version, UInt32(size))) { Array($0) } + pool[name]!.prefix(size - 8)
            try server.put(name, bytes: bytes)
            sizes[name] = size
            current[name] = bytes
            served[name, default: []].append(bytes)
        }

        /// Whether the file at `path` is one of the versions of `name` served so far.
        func holdsAVersion(_ path: String, of name: String) -> Bool {
            // A missing file is no version, not even an empty one.
            guard let data = FileManager.default.contents(atPath: path).map({ [UInt8]($0) }) else { return false }
            return served[name]?.contains(data) ?? false
        }
    }

    /// What is wrong with the directory after a kill: a file that is not the
    /// job's or its part file, a torn file, or a name that lost its file.
    static func problemsAfterAKill(_ out: String, _ files: ChangingFiles, mustExist: Set<String>) -> [String] {
        var problems: [String] = []
        let names = Set(listing(out))
        for name in names {
            if name.hasSuffix(".part"), files.current[String(name.dropLast(5))] != nil { continue }
            if files.current[name] == nil {
                problems.append("\(name) is not a file of the job")
            } else if !files.holdsAVersion(out + "/" + name, of: name) {
                problems.append("\(name) is not a whole version of itself")
            }
        }
        for name in mustExist where !names.contains(name) { problems.append("\(name) lost its file") }
        return problems
    }

    @Test func killsDuringRefreshRunsLeaveTheOldOrTheNewFileNeverACopy() async throws {
        let server = try FaultServer()
        let job = try LuaJob()
        let out = try TempDir.make("rerun-crash")
        let seed = UInt64(ProcessInfo.processInfo.environment["DLPIPE_CRASH_SEED"] ?? "") ?? UInt64.random(in: 1...1_000_000)
        var random = SplitMix64(seed: seed)
        var files = ChangingFiles(server: server)
        var urls: [String] = []
        // 24 small files (held in memory on a first run, part files when they
        // replace one) and 12 large ones (part files); half of the large ones
        // served slowly, so that kills land in the middle of their bodies.
        for index in 1...36 {
            let name = String(format: "k%03d.bin", index)
            let large = index > 24
            let maxSize = large ? 900_000 : 40_000
            files.add(name, maxSize: maxSize, seed: UInt64(index))
            try files.serve(name, version: 0, size: 1000 + Int(random.next() % UInt64(maxSize - 1000)))
            let slow = large && index % 2 == 0
            urls.append(server.url("/files/\(name)" + (slow ? "?throttle=3000000" : "")))
        }
        try job.write("refresh.lua", """
            dl.config{ refresh = "always" }
            for url in dl.var.urls:gmatch("%S+") do dl.add(url) end
            """)
        let arguments = ["run", job.directory + "/refresh.lua", "-d", out, "--json", "-j", "8", "--per-host", "8",
                         "--var", "urls=" + urls.joined(separator: " ")]
        let first = try await DLPipeRun.run(arguments)
        #expect(first.status == 0, "seed \(seed): \(first.stderr)")
        let linesPerRun = max(10, first.stdout.split(separator: "\n").count)
        var kills = 0
        for run in 1...22 {
            // A new version of every file; a third keep their size (the old and
            // the new file then differ only in their bytes).
            for name in files.current.keys.sorted() {
                let old = files.sizes[name]!
                let size = random.next() % 3 == 0 ? old : max(1000, old + Int(random.next() % 20_001) - 10_000)
                try files.serve(name, version: UInt32(run), size: min(size, name > "k024" ? 900_000 : 40_000))
            }
            let process = try Subprocess(Paths.binary, arguments, environment: ["NO_COLOR": "1"])
            let target = Int(random.next() % UInt64(linesPerRun)) + 1
            let status = await offThePool { () -> Int32 in
                var seen = 0
                while seen < target, process.readStdoutLine() != nil { seen += 1 }
                process.signal(SIGKILL)
                return process.waitForExit()
            }
            if status == 128 + SIGKILL { kills += 1 }
            let problems = Self.problemsAfterAKill(out, files, mustExist: Set(files.current.keys))
            #expect(problems.isEmpty, "seed \(seed), run \(run), killed after \(target) lines: \(problems.sorted())")
            if !problems.isEmpty { break }
        }
        let final = try await DLPipeRun.run(arguments)
        #expect(final.status == 0, "seed \(seed): \(final.stderr)")
        #expect(listing(out) == files.current.keys.sorted(), "seed \(seed): exactly the job's files")
        for (name, data) in files.current {
            let newest = sameBytes(out + "/" + name, data)  // a Bool: a failing #expect would print both arrays
            #expect(newest, "seed \(seed): \(name) is not the newest version")
        }
        #expect(kills >= 15, "seed \(seed): only \(kills) of 22 runs were killed")
    }

    /// The window that left `k030.bin` and `k032.bin` of two versions once (seed
    /// 403842): a run resumes a part file of an older version, the server's
    /// new version answers with a 200 (If-Range no longer matches), and the run
    /// is killed after the record took the new response's validators but before
    /// its part file was opened again (and truncated). The old bytes then lay
    /// under the new ETag, and the next run resumed them with an If-Range the
    /// server matched. Held open here by a response handler that does not
    /// return, killed once the new validators are committed.
    @Test func aKillAfterANewVersionsRecordNeverLeavesOldBytesToResume() async throws {
        let server = try FaultServer()
        let job = try LuaJob()
        let out = try TempDir.make("rerun-window")
        let old = try server.put("w.bin", randomBytes: 600_000, seed: 7)
        let url = server.url("/files/w.bin?stall=200000&stall_times=1")
        try job.write("w.lua", """
            dl.config{ budget = 60 }
            dl.add(dl.var.url)
            dl.on("response", function(d, r)
              if dl.var.hold == "1" then while true do end end
            end)
            """)
        let arguments = ["run", job.directory + "/w.lua", "-d", out, "--json", "--var", "url=" + url]
        // A part file of the old version, its record holding the old ETag.
        let first = try Subprocess(Paths.binary, arguments, environment: ["NO_COLOR": "1"])
        // Killed on the thread that saw the line, before the stall can end.
        let firstKilled = await offThePool { () -> Bool in
            let seen = first.waitForLine(containing: "\"progress\"")
            first.signal(SIGKILL)
            return first.waitForExit() == 128 + SIGKILL && seen
        }
        #expect(firstKilled)
        let oldPart = bytes(at: out + "/w.bin.part")
        let oldPrefix = !oldPart.isEmpty && Array(old.prefix(oldPart.count)) == oldPart
        #expect(oldPrefix, "a part file of the old version (\(oldPart.count) bytes)")
        let state = try StateStore(path: out + "/.dlpipe/state.db")
        let oldETag = try #require(try state.records().first?.etag)
        // A new version of the same size: the resume's If-Range fails, a 200.
        let new = try server.put("w.bin", randomBytes: 600_000, seed: 8)
        let second = try Subprocess(Paths.binary, arguments + ["--var", "hold=1"], environment: ["NO_COLOR": "1"])
        let (committed, secondKilled) = await offThePool { () -> (Bool, Bool) in
            var committed = false
            if second.waitForLine(containing: "\"response\"") {
                let deadline = Date().addingTimeInterval(20)
                while !committed, Date() < deadline {
                    if let etag = try? state.records().first?.etag, etag != oldETag { committed = true } else {
                        usleep(20_000)  // the state is committed every 50 ms; nothing signals it
                    }
                }
            }
            second.signal(SIGKILL)
            return (committed, second.waitForExit() == 128 + SIGKILL)
        }
        #expect(committed, "the new response's record was committed while the handler ran")
        #expect(secondKilled)
        let left = bytes(at: out + "/w.bin.part")
        let onlyNewBytes = Array(new.prefix(left.count)) == left  // a Bool: a failing #expect would print both arrays
        #expect(onlyNewBytes, "no byte of the old version under the new version's record (\(left.count) bytes left)")
        let final = try await DLPipeRun.run(arguments)
        #expect(final.status == 0, "\(final.stderr)")
        #expect(listing(out) == ["w.bin"])
        let newest = sameBytes(out + "/w.bin", new)
        #expect(newest, "w.bin is the new version, not the old one's bytes continued by the new one's")
    }

    /// A conditional re-run (the default) whose server sends changed files,
    /// killed at each of the first events of the run: the changed files are
    /// replaced under their own names, whatever the moment of the kill.
    @Test func aConditionalReRunOfChangedFilesKilledAnywhereReplacesInPlace() async throws {
        let server = try FaultServer()
        let out = try TempDir.make("rerun-changed")
        var files = ChangingFiles(server: server)
        files.add("big.bin", maxSize: 1_200_000, seed: 1)
        files.add("small.txt", maxSize: 3000, seed: 2)
        try files.serve("big.bin", version: 0, size: 1_000_000)
        try files.serve("small.txt", version: 0, size: 2000)
        let urls = [server.url("/files/big.bin?throttle=2000000"), server.url("/files/small.txt")]
        let arguments = ["get"] + urls + ["-d", out, "--json"]
        let first = try await DLPipeRun.run(arguments)
        #expect(first.status == 0, "\(first.stderr)")
        for (round, killAfter) in [1, 2, 3, 4, 6, 10, 20].enumerated() {
            // Every other round changes the size too.
            try files.serve("big.bin", version: UInt32(round + 1), size: round % 2 == 0 ? 1_000_000 : 1_100_000 + round)
            try files.serve("small.txt", version: UInt32(round + 1), size: round % 2 == 0 ? 2000 : 2500 + round)
            let process = try Subprocess(Paths.binary, arguments, environment: ["NO_COLOR": "1"])
            await offThePool {
                var seen = 0
                while seen < killAfter, process.readStdoutLine() != nil { seen += 1 }
                process.signal(SIGKILL)
                process.waitForExit()
            }
            let problems = Self.problemsAfterAKill(out, files, mustExist: ["big.bin", "small.txt"])
            #expect(problems.isEmpty, "killed after \(killAfter) lines: \(problems.sorted())")
        }
        let final = try await DLPipeRun.run(arguments)
        #expect(final.status == 0, "\(final.stderr)")
        #expect(listing(out) == ["big.bin", "small.txt"], "no numbered copies, no part files")
        for (name, data) in files.current {
            let newest = sameBytes(out + "/" + name, data)
            #expect(newest, "\(name) is not the newest version")
        }
    }
}
