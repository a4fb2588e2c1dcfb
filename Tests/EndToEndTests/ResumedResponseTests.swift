import DLPipe
import Foundation
import Synchronization
import Testing
import TestSupport

/// Issue 13: a resumed download's response says 206 as the server sent it,
/// and says that it resumes and from where, so "200, or 206 resuming" is one
/// check; the same for Lua's `r.status` and `r.resumed_from`.
@Suite struct ResumedResponseTests {
    let server: FaultServer
    let out: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("resumed")
    }

    @Test func aResumeIs206WithResumedFromAndAWholeBodyIs200WithNone() async throws {
        let data = try server.put("r.bin", randomBytes: 500_000)
        let engine = try DownloadEngine(configuration: EngineConfiguration(directory: out, backoffBase: 0.01))
        let responses = Mutex<[ResponseInfo]>([])
        engine.observe { event in if case .response(_, let r) = event { responses.withLock { $0.append(r) } } }
        // The first attempt breaks after 200,000 bytes; the retry resumes.
        let task = engine.addTask(server.url("/files/r.bin?reset=200000&reset_times=1"))
        let file = try await within(seconds: 30, "the resumed download") { try? await task.value }
        #expect(file?.bytes == 500_000)
        #expect(sameBytes(out + "/r.bin", data))
        let seen = responses.withLock { $0 }
        try #require(seen.count == 2, "\(seen)")
        #expect(seen[0].status == 200 && seen[0].resumedFrom == nil && seen[0].isWholeOrResumed)
        #expect(seen[1].status == 206, "the status the server sent")
        let from = try #require(seen[1].resumedFrom)
        #expect(from > 0 && from <= 200_000)
        #expect(seen[1].length == 500_000, "the whole resource's length")
        #expect(seen[1].isWholeOrResumed)
        await engine.stop()
    }

    @Test func aServerThatIgnoresTheRangeSends200AndTheFileStartsOver() async throws {
        let data = try server.put("n.bin", randomBytes: 400_000)
        let engine = try DownloadEngine(configuration: EngineConfiguration(directory: out, backoffBase: 0.01))
        let responses = Mutex<[ResponseInfo]>([])
        engine.observe { event in if case .response(_, let r) = event { responses.withLock { $0.append(r) } } }
        let task = engine.addTask(server.url("/files/n.bin?no_range=1&truncate=150000&truncate_times=1"))
        #expect(try await within(seconds: 30, "the restarted download") { try? await task.value }?.bytes == 400_000)
        #expect(sameBytes(out + "/n.bin", data))
        let seen = responses.withLock { $0 }
        #expect(seen.count == 2 && seen.allSatisfy { $0.status == 200 && $0.resumedFrom == nil }, "\(seen)")
        await engine.stop()
    }

    @Test func luaSeesTheStatusAndResumedFrom() async throws {
        let data = try server.put("l.bin", randomBytes: 500_000)
        let job = try LuaJob()
        // The break comes past the 256 KiB a transfer holds in memory while
        // its response handler has not answered: by then the bytes are in
        // the part file, however slowly the handler answers (a break at
        // 200,000 bytes under load could come before that, with nothing on
        // disk to resume from, and the retry rightly started over with 200).
        try job.write("job.lua", """
            dl.config{ retries = 2 }
            dl.add(dl.var.base .. "/l.bin?reset=300000&reset_times=1")
            dl.on("response", function(d, r)
              dl.warn("response " .. r.status .. " " .. tostring(r.resumed_from))
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/l.bin", data))
        let lines = run.events("warning").compactMap { $0["message"] as? String }
        #expect(lines.count == 2, "\(run.stdout)")
        #expect(lines.first == "response 200 nil", "\(lines)")
        let resumed = lines.last.map { $0.split(separator: " ").suffix(2) }.map(Array.init) ?? []
        #expect(resumed.first == "206", "\(lines)")
        #expect((resumed.last.flatMap { Int($0) } ?? 0) > 0, "\(lines)")
    }
}
