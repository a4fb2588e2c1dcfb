import Foundation
import Testing

/// `dl.config{ max_downloads = N }` raises the limit for the job's own top-level
/// adds that follow it (found by scripts/bench's set 6: a job of 1,000,000 adds
/// stopped at the default 250,000 although it had raised the limit).
@Suite struct MaxDownloadsTests {
    @Test func aRaisedLimitCoversTheJobsOwnTopLevelAdds() async throws {
        let job = try LuaJob()
        try job.write("job.lua", """
            dl.config{ max_downloads = 260000 }
            for i = 1, 250001 do dl.add("http://127.0.0.1:1/f" .. i) end
            """)
        let run = try await DLPipeRun.run(["check", job.directory + "/job.lua", "--no-hooks"])
        #expect(run.status == 0, "\(run.stderr.prefix(300))")
        #expect(run.stdout.contains("250001 download(s) queued"), "\(run.stdout)")
    }

    @Test func theLimitStillHolds() async throws {
        let job = try LuaJob()
        try job.write("job.lua", """
            dl.config{ max_downloads = 10 }
            for i = 1, 11 do dl.add("http://127.0.0.1:1/f" .. i) end
            """)
        let run = try await DLPipeRun.run(["check", job.directory + "/job.lua", "--no-hooks"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("job.lua:2: dl.add: this run already has 10 downloads"), "\(run.stderr.prefix(300))")
    }
}
