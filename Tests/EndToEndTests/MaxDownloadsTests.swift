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

    @Test func theLimitStillHoldsAndLaterAddsReturnNilWithOneWarning() async throws {
        let job = try LuaJob()
        try job.write("job.lua", """
            dl.config{ max_downloads = 10 }
            local refused = 0
            for i = 1, 12 do if dl.add("http://127.0.0.1:1/f" .. i) == nil then refused = refused + 1 end end
            dl.log("refused", refused)
            """)
        let run = try await DLPipeRun.run(["check", job.directory + "/job.lua", "--no-hooks"])
        #expect(run.status == 0, "\(run.stderr.prefix(300))")
        #expect(run.stdout.contains("10 download(s) queued"), "\(run.stdout)")
        #expect(run.stderr.contains("refused\t2"), "\(run.stderr.prefix(300))")
        let warnings = run.stderr.split(separator: "\n").filter { $0.contains("this run already has 10 downloads") }
        #expect(warnings.count == 1, "one warning: \(run.stderr.prefix(500))")
        #expect(warnings.first?.contains("job.lua:3") == true, "\(warnings)")
    }
}
