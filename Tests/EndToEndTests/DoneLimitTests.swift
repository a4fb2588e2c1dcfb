import Foundation
import Testing

/// `done` fires at most `max_done` times in a run (default 1,000): a done handler
/// that adds a download each time once kept a run going for hours.
@Suite struct DoneLimitTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "done-limit")
        try server.put("a.txt", bytes: Array("alpha".utf8))
    }

    @Test func doneStopsFiringPastMaxDoneAndTheRunEnds() async throws {
        let run = try await job.run(source: """
            dl.config{ max_done = 3 }
            local n = 0
            dl.on("done", function(s)
              n = n + 1
              dl.log("done number " .. n)
              dl.add{ url = dl.var.base .. "/a.txt?n=" .. n, name = "a" .. n .. ".txt" }
            end)
            """, out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.logLines(containing: "done number").count == 3, "\(run.stderr)")
        let warnings = run.events("warning").compactMap { $0["message"] as? String }
        #expect(warnings.filter { $0.contains("done has fired 3 times in this run, the most it may (dl.config{ max_done = N })") }.count == 1, "\(warnings)")
        // The third done's add ran; no fourth done followed it.
        #expect(try server.requests(matching: "/files/a.txt").count == 3)
    }

    @Test func maxDoneIsCheckedLikeEveryCount() async throws {
        let path = try job.write("job.lua", "dl.config{ max_done = 0 }\n")
        let check = try await DLPipeRun.run(["check", path, "--no-hooks"])
        #expect(check.status == 2)
        #expect(check.stderr.contains("job.lua:1: dl.config: max_done wants a whole number from 1 to 1000000, not 0"), "\(check.stderr)")
    }
}
