import Foundation
import Testing

/// `dl.store` has limits (issue 19): one value takes at most 1 MiB as stored, and a job's
/// values at most 64 MiB together; replacing a value frees its room. Each refusal is an error
/// of the call, which a script may catch. (383 MB were written in 30 s before.)
@Suite struct StoreLimitTests {
    @Test func aValueOrAStoreTooLargeIsRefusedAndReplacingFreesRoom() async throws {
        let job = try LuaJob()
        let out = try TempDir.make("storelimit")
        try job.write("job.lua", """
            dl.config{ budget = 120 }  -- for the handler: 64 MB through SQLite take seconds on a loaded machine
            dl.on("done", function()
              local ok, err = pcall(dl.store.set, "big", ("x"):rep(2^20 + 1))
              dl.log("value", tostring(ok), err)
              local piece = ("y"):rep(2^20 - 100)
              for i = 1, 70 do
                local ok, err = pcall(dl.store.set, "k" .. i, piece)
                if not ok then dl.log("total at " .. i .. ": " .. err) break end
              end
              dl.store.set("k1", "small")
              dl.log("after replacing", tostring((pcall(dl.store.set, "again", piece))), #dl.store.get("k2"), dl.store.get("big"))
            end)
            """)
        let run = try await job.run("job.lua", out: out)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("value\tfalse\t"), "\(run.stderr)")
        #expect(run.stderr.contains("bytes as stored, more than the 1 MiB one value may"), "\(run.stderr)")
        #expect(run.stderr.contains("total at 65: "), "64 values of about 1 MiB fit: \(run.stderr)")
        #expect(run.stderr.contains("more than the 64 MiB it may hold"), "\(run.stderr)")
        #expect(run.stderr.contains("after replacing\ttrue\t1048476\tnil"), "\(run.stderr)")
    }
}
