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
            dl.on("response", function(d, r) return false end)
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
            dl.on("failed", function(d, e) return 0.5 end)
            """)
        #expect(run.status == 1)
        #expect(run.logLines(containing: "a failed handler returns nothing, dl.retry(seconds), dl.handled() or false, not 0.5").count == 1, "\(run.stderr)")
        #expect(try server.requests(matching: "/files/none.txt").count == 1, "no retry came of it")
    }

    @Test func doneReturningTrueOrAReservedCodeIsAnError() async throws {
        let yes = try await run("""
            dl.on("done", function(s) return true end)
            """)
        #expect(yes.status == 0)
        #expect(yes.logLines(containing: "a done handler returns nothing or an exit code (0, 1 or 5-125), not true").count == 1, "\(yes.stderr)")
        let locked = try await run("""
            dl.on("done", function(s) return 3 end)
            """)
        #expect(locked.status == 0, "3 means the lock is held: never from a handler")
        #expect(locked.logLines(containing: "not 3: dlpipe exits 3 when another run holds the lock").count == 1, "\(locked.stderr)")
        let wrapped = try await run("""
            dl.on("done", function(s) return 256 end)
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

    @Test func aBadRetryDelayIsAnError() async throws {
        let run = try await run("""
            dl.config{ retries = 0 }
            dl.add(dl.var.base .. "/none.txt")
            dl.on("failed", function(d, e) return dl.retry("soon") end)
            """)
        #expect(run.status == 1)
        #expect(run.logLines(containing: "job.lua:3: dl.retry wants a delay in seconds (a number from 0), not soon").count == 1, "\(run.stderr)")
    }
}
