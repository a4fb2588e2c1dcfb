import Foundation
import Testing
import TestSupport

/// Every thread a `dlpipe run` starts has a name of its own in
/// /proc/PID/task/*/comm (what gdb, perf and top show), not the binary's:
/// the engine, the Lua thread and its watchdogs, the output and stop threads,
/// and the outputs' sync thread; GCD's pool threads carry libdispatch's names
/// or, once they ran a block of ours, that queue's.
/// Issue 37, item 3; docs/design/engine-confinement.md.
@Suite struct ThreadNameTests {
    @Test func aRunningRunShowsItsThreadsByName() async throws {
        let server = try FaultServer()
        try server.put("a.bin", randomBytes: 200_000)
        try server.put("b.bin", randomBytes: 200_000)
        let job = try LuaJob()
        // A hook, so that Lua runs; a.bin is placed (a commit on the state
        // queue, a syncfs on the sync thread); b.bin's response stalls after
        // 1,000 bytes, which keeps the run going while its threads are read.
        try job.write("job.lua", """
            dl.on("finished", function(d) dl.log("placed", d.name) end)
            dl.add("\(server.url("/files/a.bin"))")
            dl.add("\(server.url("/files/b.bin?stall=1000"))")
            """)
        let out = try TempDir.make("thread-names")
        let run = try Subprocess(Paths.binary, ["run", job.directory + "/job.lua", "-d", out, "--json"], timeout: 30)
        let placed = await offThePool { run.waitForLine(containing: "\"finished\"") }
        #expect(placed, "a.bin ended")
        let threads = Self.threadNames(of: run.pid)
        run.signal(SIGTERM)
        #expect(await offThePool { run.waitForExit(within: 20) } == 130)

        #expect(threads[run.pid] == "dlpipe", "the main thread keeps the binary's name: \(threads)")
        let names = Set(threads.values)
        // Threads of dlpipe's own, there for the whole run. Not required:
        // `dlpipe-state`, a GCD pool thread that named itself for the state's
        // commit and that libdispatch may have retired once idle (seen under
        // load); NamedQueueTests checks that such a thread takes the name.
        for name in [
            "dlpipe-engine", "dlpipe-lua", "dlpipe-luawatch", "dlpipe-backstop", "dlpipe-output", "dlpipe-stop",
            "dlpipe-sync",
        ] {
            #expect(names.contains(name), "\(name) missing: \(threads)")
        }
        // ThreadSanitizer's build (scripts/tsan) starts a thread of its own
        // before main, which keeps the binary's name.
        let sanitizerThreads = ProcessInfo.processInfo.environment["TSAN_OPTIONS"] == nil ? 0 : 1
        let unnamed = threads.filter { $0.key != run.pid && $0.value == "dlpipe" }
        #expect(unnamed.count <= sanitizerThreads, "threads left with the binary's name: \(threads)")
        for (tid, name) in threads where tid != run.pid && name != "dlpipe" {
            // libdispatch names its own pool threads after their root queue
            // ("com.apple.root.default-qos", of which Linux keeps the last 15
            // bytes); a pool thread that ran a block of ours carries our name.
            #expect(name.hasPrefix("dlpipe-") || name.contains("qos"), "thread \(tid) is named \(name)")
        }
    }

    /// Thread id to name, from /proc/PID/task/*/comm.
    static func threadNames(of pid: pid_t) -> [pid_t: String] {
        let tasks = "/proc/\(pid)/task"
        var names: [pid_t: String] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? [] {
            guard let tid = pid_t(entry), let comm = try? String(contentsOfFile: "\(tasks)/\(entry)/comm", encoding: .utf8)
            else { continue }
            names[tid] = comm.trimmingCharacters(in: .newlines)
        }
        return names
    }
}
