import Foundation
import Testing

/// Numbers out of range from a handler, a drop-in hook's included: an error of
/// the call at its line, never a trap of the process (1e300 as a timeout, and
/// math.mininteger as an id, once killed `run` with SIGILL, exit 132).
@Suite struct NumberRangeRunTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "numbers")
        try server.put("a.txt", bytes: Array("alpha".utf8))
        try server.put("b.txt", bytes: Array("beta".utf8))
    }

    private func run(_ source: String) async throws -> DLPipeRun {
        try await job.run(source: source, out: out, ["--var", "base=\(server.url("/files"))", "--retries", "0"])
    }

    @Test func aHookHandlersHugeTimeoutFailsItsDownloadNotTheRun() async throws {
        try job.write("hooks.d/chain.lua", """
            dl.on("finished", function(d)
              dl.add{ url = dl.var.base .. "/b.txt", timeout = 1e300 }
            end)
            """)
        let run = try await run("dl.add(dl.var.base .. \"/a.txt\")\n")
        #expect(run.status == 1, "\(run.stderr)")
        let failed = try #require(run.events("failed").first, "\(run.stdout)")
        #expect(failed["kind"] as? String == "hook")
        let message = failed["message"] as? String ?? ""
        #expect(message.contains("chain.lua:2: dl.add: timeout wants a number of seconds above 0, at most 86400, not 1e+300"), "\(message)")
        #expect(try server.requests(matching: "/files/b.txt").isEmpty)
    }

    @Test func hostileIdsAndDelaysInHandlersAreErrorsOrNothing() async throws {
        let run = try await run("""
            dl.add(dl.var.base .. "/a.txt")
            dl.add(dl.var.base .. "/none.txt")
            dl.on("response", function(d)
              dl.cancel(math.mininteger); dl.pause(math.mininteger); dl.resume(math.maxinteger)
            end)
            dl.on("failed", function(d, e) return dl.retry(1/0) end)
            """)
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.events("finished").count == 1, "\(run.stdout)")
        #expect(run.logLines(containing: "job.lua:6: dl.retry wants a delay, a number of seconds from 0 to 86400, not inf").count == 1, "\(run.stderr)")
    }
}
