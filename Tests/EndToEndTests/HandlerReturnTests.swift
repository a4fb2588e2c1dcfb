import Foundation
import Testing

/// What handlers return (issue 14): a verdict call takes effect, any other value
/// is a hook error that names what the event takes, and done's exit codes keep
/// clear of dlpipe's own.
@Suite struct HandlerReturnTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "returns")
        try server.put("a.txt", bytes: Array("alpha".utf8))
    }

    private func run(_ source: String, _ extra: [String] = []) async throws -> DLPipeRun {
        try await job.run(source: source, out: out, ["--var", "base=\(server.url("/files"))"] + extra)
    }

    @Test func skipWithoutReturnSkips() async throws {
        let run = try await run("""
            dl.add(dl.var.base .. "/a.txt")
            dl.on("response", function(d, r) dl.skip("no thanks") end)
            """)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.events("skipped").compactMap { $0["reason"] as? String } == ["no thanks"])
        #expect(listing(out).filter { !$0.hasPrefix(".") }.isEmpty, "nothing written")
    }

    @Test func aResponseHandlerReturningFalseFailsNamingTheExpectedReturn() async throws {
        let run = try await run("""
            dl.add(dl.var.base .. "/a.txt")
            dl.on("response", function(d, r) local verdict = false; return verdict end)
            """)
        #expect(run.status == 1)
        let failed = try #require(run.events("failed").first, "\(run.stdout)")
        #expect(failed["kind"] as? String == "hook")
        let message = failed["message"] as? String ?? ""
        #expect(message.hasPrefix("\(job.directory)/job.lua:2: a response handler returns nothing or dl.skip(reason), not false"), "\(message)")
    }

    @Test func aFailedHandlerReturningANumberIsReported() async throws {
        let run = try await run("""
            dl.config{ retries = 0 }
            dl.add(dl.var.base .. "/none.txt")
            dl.on("failed", function(d, e) local delay = 0.5; return delay end)
            """)
        #expect(run.status == 1)
        #expect(run.logLines(containing: "a failed handler returns nothing, dl.retry(seconds), dl.handled() or false, not 0.5").count == 1, "\(run.stderr)")
        #expect(try server.requests(matching: "/files/none.txt").count == 1, "no retry came of it")
    }

    @Test func doneReturningTrueOrAReservedCodeIsAnError() async throws {
        let yes = try await run("""
            dl.on("done", function(s) local code = true; return code end)
            """)
        #expect(yes.status == 0)
        #expect(yes.logLines(containing: "a done handler returns nothing or an exit code (0, 1 or 5-125), not true").count == 1, "\(yes.stderr)")
        let locked = try await run("""
            dl.on("done", function(s) local code = 3; return code end)
            """)
        #expect(locked.status == 0, "3 means the lock is held: never from a handler")
        #expect(locked.logLines(containing: "not 3: dlpipe exits 3 when another run holds the lock").count == 1, "\(locked.stderr)")
        let wrapped = try await run("""
            dl.on("done", function(s) local code = 256; return code end)
            """)
        #expect(wrapped.status == 0, "no wrap to 0")
        #expect(wrapped.logLines(containing: "not 256").count == 1, "\(wrapped.stderr)")
    }

    @Test func everyDoneHandlerRunsAndTheFirstCodeWins() async throws {
        try job.write("hooks.d/late.lua", """
            dl.on("done", function(s) dl.log("late hook ran"); return 9 end)
            """)
        let run = try await run("""
            dl.on("done", function(s) return 7 end)
            """)
        #expect(run.status == 7, "\(run.stderr)")
        #expect(run.logLines(containing: "late hook ran").count == 1)
    }

    /// Cron reads the exit code: a drop-in hook's done that returns 0 must not
    /// turn a failed download into a clean run (issue 36). Its value is
    /// dropped with one warning; the job's own done still sets the code.
    @Test func aHookDoneCannotSetTheExitCode() async throws {
        try job.write("hooks.d/calm.lua", """
            dl.on("done", function(s) return 0 end)
            """)
        let failed = try await run("""
            dl.config{ retries = 0 }
            dl.add(dl.var.base .. "/none.txt")
            dl.on("done", function(s) end)
            """)
        #expect(failed.status == 1, "a failed download still exits 1: \(failed.stderr)")
        let warnings = failed.events("warning")
        #expect(warnings.count == 1, "\(failed.stdout)")
        #expect((warnings.first?["script"] as? String)?.hasSuffix("hooks.d/calm.lua:1") == true, "\(warnings)")
        #expect(warnings.first?["message"] as? String == "a done handler of a drop-in hook returns nothing (only the job's own done sets the exit code), not 0: ignored")
        // A hook's code never stands, whichever handler comes first in the files.
        try job.write("hooks.d/calm.lua", """
            dl.on("done", function(s) return 9 end)
            """)
        let clean = try await run("""
            dl.add(dl.var.base .. "/a.txt")
            """)
        #expect(clean.status == 0, "\(clean.stderr)")
        #expect(clean.events("warning").compactMap { $0["message"] as? String }.filter { $0.hasSuffix("not 9: ignored") }.count == 1, "\(clean.stdout)")
        let jobCode = try await run("""
            dl.add(dl.var.base .. "/a.txt")
            dl.on("done", function(s) return 6 end)
            """)
        #expect(jobCode.status == 6, "\(jobCode.stderr)")
    }

    @Test func aBadRetryDelayIsAnError() async throws {
        let run = try await run("""
            dl.config{ retries = 0 }
            dl.add(dl.var.base .. "/none.txt")
            dl.on("failed", function(d, e) return dl.retry("soon") end)
            """)
        #expect(run.status == 1)
        #expect(run.logLines(containing: "job.lua:3: dl.retry wants a delay, a number of seconds from 0 to 86400, not soon").count == 1, "\(run.stderr)")
    }
}
