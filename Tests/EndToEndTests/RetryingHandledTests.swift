import Foundation
import Testing

/// SPEC 1.2 as issue 14 settles it: `retrying` before each retry, `failed` once
/// when no retry follows, `dl.handled()` for failures a fallback dealt with, and
/// `finished` for files that refresh "never" keeps.
@Suite struct RetryingHandledTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "retrying")
        try server.put("a.txt", bytes: Array("alpha".utf8))
    }

    private func run(_ source: String, _ extra: [String] = ["--json"]) async throws -> DLPipeRun {
        try job.write("job.lua", source)
        return try await DLPipeRun.run(["run", job.directory + "/job.lua", "-d", out, "--var", "base=\(server.url("/files"))"] + extra)
    }

    @Test func retryingRunsBeforeEachRetryAndFailedOnce() async throws {
        let run = try await run("""
            dl.config{ retries = 2 }
            dl.add(dl.var.base .. "/a.txt?status=503")
            dl.on("retrying", function(d, e)
              dl.log("retrying", e.attempt, e.status, e.retry_after)
              return dl.retry(0.01)
            end)
            dl.on("failed", function(d, e) dl.log("failed", e.attempt, e.status) end)
            """)
        #expect(run.status == 1)
        #expect(run.logLines(containing: "retrying\t").count == 2, "\(run.stderr)")
        #expect(run.logLines(containing: "retrying\t1\t503\t").count == 1, "e.retry_after is the policy's delay")
        #expect(run.logLines(containing: "failed\t").map { $0.split(separator: "]").last ?? "" } == [" failed\t3\t503"])
        #expect(run.events("retrying").compactMap { $0["delay"] as? Double } == [0.01, 0.01], "the handler's delay")
    }

    @Test func retryingReturningFalseGivesUpAndFailedRuns() async throws {
        let run = try await run("""
            dl.add(dl.var.base .. "/a.txt?status=503&k=1")
            dl.on("retrying", function(d, e) return false end)
            dl.on("failed", function(d, e) dl.log("failed once", e.attempt) end)
            """)
        #expect(run.status == 1)
        #expect(try server.requests(matching: "/files/a.txt").count == 1, "no retry")
        #expect(run.logLines(containing: "failed once\t1").count == 1, "\(run.stderr)")
    }

    @Test func handledFailuresNeitherCountNorPrintNorFailTheRun() async throws {
        let source = """
            dl.config{ retries = 0 }
            dl.add{ url = dl.var.base .. "/gone/a.txt", meta = { fallback = dl.var.base .. "/a.txt" } }
            dl.on("failed", function(d, e)
              if d.meta and d.meta.fallback then
                dl.add(d.meta.fallback)
                return dl.handled()
              end
            end)
            dl.on("done", function(s) dl.warn("summary", s.finished, s.failed, s.handled) end)
            """
        let quiet = try await run(source, ["-q", "--progress", "none"])
        #expect(quiet.status == 0, "a handled failure is no exit 1: \(quiet.stderr)")
        #expect(quiet.logLines(containing: "summary\t1\t0\t1").count == 1, "\(quiet.stderr)")
        #expect(quiet.logLines(containing: "gone/a.txt").isEmpty, "-q prints no handled failure")
        #expect(sameBytes(out + "/a.txt", Array("alpha".utf8)))

        let json = try await run(source)
        #expect(json.status == 0)
        #expect(json.events("failed").isEmpty)
        #expect(json.events("handled").compactMap { $0["status"] as? Int } == [404])
        let done = try #require(json.events("done").first)
        #expect(done["handled"] as? Int == 1 && done["failed"] as? Int == 0)

        let status = try await DLPipeRun.run(["status", out])
        #expect(status.stdout.contains("1 handled"), "\(status.stdout)")
        #expect(!status.stdout.contains("failed:"), "not listed as failed")
        #expect(status.stdout.contains("handled:\n  \(server.url("/files/gone/a.txt"))"), "\(status.stdout)")
        let statusJSON = try await DLPipeRun.run(["status", out, "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(statusJSON.stdout.utf8)) as? [String: Any]
        #expect(object?["handled"] as? Int == 1 && object?["failed"] as? Int == 0)
    }

    @Test func refreshNeverRaisesFinishedWithTheStoredType() async throws {
        let source = """
            dl.config{ refresh = "never" }
            dl.add(dl.var.base .. "/a.txt")
            dl.on("finished", function(d, f) dl.log("finished", f.unchanged, f.type) end)
            dl.on("done", function(s) dl.log("summary", s.finished, s.unchanged) end)
            """
        let first = try await run(source)
        #expect(first.status == 0)
        #expect(first.logLines(containing: "finished\tfalse\ttext/plain").count == 1, "\(first.stderr)")
        let second = try await run(source)
        #expect(second.status == 0)
        #expect(try server.requests(matching: "/files/a.txt").count == 1, "never: not asked again")
        #expect(second.logLines(containing: "finished\ttrue\ttext/plain").count == 1, "the handler runs: \(second.stderr)")
        #expect(second.logLines(containing: "summary\t0\t1").count == 1)
        let finished = try #require(second.events("finished").first)
        #expect(finished["unchanged"] as? Bool == true && finished["type"] as? String == "text/plain")
    }
}
