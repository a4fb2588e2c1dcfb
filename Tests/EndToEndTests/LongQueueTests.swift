import DLPipe
import Foundation
import Testing

/// Queues longer than the engine's memory share (8,192 requests): the rest
/// wait in the scratch file beside the state (`SQLitePendingRequests`), and a
/// job's top-level adds past the share in one of their own. Deduplication,
/// priorities and the stop's events hold for them as for the first ones.
@Suite struct LongQueueTests {
    static let count = 9_000

    /// `dl.add` gives a repeat its first id whether that request waits in
    /// memory or in the file, and a request with credentials stays in memory.
    @Test func aJobsRepeatsPastTheMemoryShareGetTheirFirstIds() async throws {
        let job = try LuaJob()
        try job.write("many.lua", """
            local base = "http://127.0.0.1:1/q/"
            for i = 1, \(Self.count) do
              assert(dl.add(base .. i .. ".bin") == i)
            end
            local secret = dl.add("http://user:pw@127.0.0.1:1/q/secret.bin")
            assert(secret == \(Self.count + 1), "secret " .. tostring(secret))
            assert(dl.add(base .. "1.bin") == 1)
            assert(dl.add(base .. "\(Self.count).bin") == \(Self.count))
            assert(dl.add(base .. "8500.bin") == 8500)
            assert(dl.add("http://user:pw@127.0.0.1:1/q/secret.bin") == secret)
            assert(dl.add{ url = base .. "8500.bin", name = "other.bin" } == \(Self.count + 2))
            """)
        let run = try await DLPipeRun.run(["check", job.directory + "/many.lua"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("\(Self.count + 2) download(s) queued"), "\(run.stdout)")
    }

    /// A list of 9,000 URLs with repeats at its end: each URL is fetched once,
    /// the ones read back from the file included.
    @Test func getFetchesEachURLOfALongListOnce() async throws {
        let nginx = try Nginx.shared()
        let folder = Nginx.uniquePath()
        for i in 1...Self.count { try nginx.put("\(folder)/\(i).txt", bytes: Array("\(i)".utf8)) }
        let out = try TempDir.make("longlist")
        var lines = (1...Self.count).map { nginx.url("\(folder)/\($0).txt", tls: false) }
        lines += ["# repeats", "", nginx.url("\(folder)/1.txt", tls: false), nginx.url("\(folder)/8500.txt", tls: false),
                  nginx.url("\(folder)/\(Self.count).txt", tls: false)]
        let list = out + "/../longlist-\(UUID().uuidString.prefix(8)).txt"
        try lines.joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)
        let run = try await DLPipeRun.run(["get", "-i", list, "-d", out, "-j", "16", "--per-host", "16", "-q"])
        #expect(run.status == 0, "\(run.stderr)")
        let requests = nginx.requests(matching: folder + "/")
        #expect(requests.count == Self.count)
        #expect(Set(requests.map(\.uri)).count == Self.count)
        let files = listing(out)
        #expect(files.count == Self.count)
        #expect(FileManager.default.contents(atPath: out + "/8999.txt") == Data("8999".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: out + "/.dlpipe").allSatisfy { !$0.contains("pending") },
                "the scratch file is gone")
    }

    /// 10,000 adds, then one of priority 10: the urgent one is still the
    /// first request, though most of the others wait in the file.
    @Test func aLateUrgentAddPastTheMemoryShareStillGoesFirst() async throws {
        let server = try FaultServer()
        let job = try LuaJob()
        try server.put("a.txt", bytes: Array("a".utf8))
        try server.put("c.txt", bytes: Array("c".utf8))
        try job.write("many.lua", """
            for i = 1, 10000 do
              dl.add{ url = dl.var.base .. "/a.txt?n=" .. i, name = "low" .. i .. ".txt" }
            end
            dl.add{ url = dl.var.base .. "/c.txt", name = "urgent.txt", priority = 10 }
            """)
        let out = try TempDir.make("longpriority")
        let process = try Subprocess(
            Paths.binary,
            ["run", job.directory + "/many.lua", "-d", out, "-j", "1", "--json", "--var", "base=\(server.url("/files"))"])
        let done = Flag()
        DispatchQueue.global().asyncAfter(deadline: .now() + 60) {
            if !done.isSet { process.signal(SIGKILL) }
        }
        let sawFinished = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: process.waitForLine(containing: "\"event\":\"finished\"")) }
        }
        done.set()
        process.signal(SIGKILL)
        process.waitForExit()
        #expect(sawFinished)
        let first = try server.requests(matching: "/files/").first
        #expect(first?["path"] as? String == "/files/c.txt", "the first request was \(String(describing: first))")
    }

    /// A stop names every download still queued, the stored ones with their
    /// own URLs, in id order.
    @Test func theStopNamesStoredDownloadsWithTheirURLs() async throws {
        let nginx = try Nginx.shared()
        let folder = Nginx.uniquePath()
        try nginx.put("/slow\(folder)/big.bin", randomBytes: 2_000_000)
        let out = try TempDir.make("longstop")
        var configuration = EngineConfiguration()
        configuration.directory = out
        configuration.statePath = out + "/.dlpipe/state.db"
        configuration.concurrency = 1
        let engine = try DownloadEngine(configuration: configuration)
        let events = engine.events()
        let reader = Task {
            var stopped: [DownloadInfo] = []
            for await event in events { if case .stopped(let info) = event { stopped.append(info) } }
            return stopped
        }
        let urls = (1...Self.count).map { nginx.url("/slow\(folder)/big.bin?n=\($0)", tls: false) }
        let ids = engine.add(contentsOf: urls.map { DownloadRequest(url: $0, name: "f\($0.split(separator: "=").last!).bin") })
        #expect(ids.map(\.rawValue) == Array(1...Self.count))
        await engine.stop()
        let seen = await reader.value
        #expect(seen.count == Self.count, "none can have finished: the first file takes 20 s")
        #expect(seen.map(\.id) == ids)
        for info in seen { #expect(info.url.hasSuffix("?n=\(info.id.rawValue)")) }
    }

    /// `-i` is read a megabyte at a time: a list of more than one read,
    /// CRLF line ends, a comment line and a URL cut by the read's end, and a
    /// last line without an end, is read as a list read whole would be.
    @Test func aListLongerThanOneReadKeepsItsLines() async throws {
        let nginx = try Nginx.shared()
        let folder = Nginx.uniquePath()
        try nginx.put("\(folder)/a.txt", bytes: Array("a".utf8))
        try nginx.put("\(folder)/b.txt", bytes: Array("b".utf8))
        let a = nginx.url("\(folder)/a.txt", tls: false)
        let b = nginx.url("\(folder)/b.txt", tls: false)
        // The comments end 10 bytes before the first read's end: a's line is cut there.
        let comment = "# " + String(repeating: "x", count: 96) + "\r\n"
        var text = String(repeating: comment, count: (1 << 20) / comment.utf8.count)
        text += String(repeating: "#", count: (1 << 20) - 10 - text.utf8.count) + "\r\n"
        text += "  \(a)\t\r\n" + String(repeating: comment, count: 3) + b
        let out = try TempDir.make("longread")
        let list = out + "/../longread-\(UUID().uuidString.prefix(8)).txt"
        try text.write(toFile: list, atomically: true, encoding: .utf8)
        let run = try await DLPipeRun.run(["get", "-i", list, "-d", out, "-q"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(listing(out) == ["a.txt", "b.txt"])
        #expect(nginx.requests(matching: folder + "/").count == 2)
    }

    /// A list that is a folder is a usage error before anything is queued.
    @Test func aListThatCannotBeReadQueuesNothing() async throws {
        let out = try TempDir.make("listfolder")
        let run = try await DLPipeRun.run(["get", "http://127.0.0.1:1/first", "-i", out, "-d", out])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("cannot read the URL list"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out + "/.dlpipe/state.db"), "no run started")
    }
}
