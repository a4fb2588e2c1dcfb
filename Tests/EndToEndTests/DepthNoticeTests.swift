import Foundation
import Testing

/// The `max_depth` notice: once per run however many links go past the
/// limit; `-q` keeps it off stderr (a crawler that limits its depth on
/// purpose mails nothing from cron), and `--json` still has it as an event.
@Suite struct DepthNoticeTests {
    let server: FaultServer
    let job: LuaJob

    init() throws {
        server = try FaultServer()
        job = try LuaJob()
        for i in 0..<6 { _ = try server.put("p\(i).txt", randomBytes: 100, seed: UInt64(i + 1)) }
        // Each page at depth 1 links ten pages at depth 2: past max_depth = 1.
        try job.write("job.lua", """
            dl.config{ max_depth = 1 }
            local base = "\(server.url("/files/"))"
            dl.add(base .. "p0.txt")
            dl.on("finished", function(d, f)
              for i = 1, 5 do
                for k = 1, 10 do dl.add(base .. "p" .. i .. ".txt?k=" .. k .. "&from=" .. d.id) end
              end
            end)
            """)
    }

    private func run(_ extra: [String]) async throws -> DLPipeRun {
        let out = try TempDir.make("depth-notice")
        return try await DLPipeRun.run(["run", job.directory + "/job.lua", "-d", out] + extra)
    }

    @Test func theNoticeIsShownOnce() async throws {
        let run = try await run([])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.logLines(containing: "past max_depth").count == 1, "\(run.stderr)")
        #expect(run.logLines(containing: "warning: dl.add:").count == 1, "\(run.stderr)")
    }

    @Test func quietHidesItFromStderr() async throws {
        let run = try await run(["-q"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.isEmpty, "\(run.stderr)")
    }

    @Test func quietJSONHasItOnceAsAnEvent() async throws {
        let run = try await run(["-q", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!run.stderr.contains("max_depth"), "\(run.stderr)")
        let notices = run.events("warning").filter { ($0["message"] as? String)?.contains("past max_depth = 1") == true }
        #expect(notices.count == 1, "\(run.stdout)")
        #expect(notices.first?["id"] as? Int != nil, "the download whose handler met the limit")
    }
}
