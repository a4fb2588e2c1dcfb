import Foundation
import Testing

/// Server faults beyond GetFaultTests: a huge URL, bad bytes in headers, and a
/// Retry-After far in the future.
@Suite struct MoreServerFaultTests {
    let server: FaultServer
    let out: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("more-faults")
    }

    /// curl takes URLs up to 8 MB and the server up to 64 KiB a request line, so
    /// a 10,000-character URL is an ordinary download; its name is cut to size.
    @Test(arguments: ["/files/x.bin?pad=" + String(repeating: "q", count: 10_000),
                      "/a/" + String(repeating: "b", count: 10_000) + ".bin?serve=x.bin"])
    func tenThousandCharacterURL(_ path: String) async throws {
        let data = try server.put("x.bin", randomBytes: 5000)
        #expect(server.url(path).count > 10_000)
        let run = try await DLPipeRun.run(["get", server.url(path), "-d", out, "--json"])
        #expect(run.status == 0, "\(run.stderr.prefix(300))")
        let names = NameChecks.rawEntries(out).filter { $0 != Array(".dlpipe".utf8) }
        #expect(names.count == 1)
        #expect(names.allSatisfy { NameChecks.problem($0) == nil })
        #expect(names.first.map { sameBytes(out + "/" + String(decoding: $0, as: UTF8.self), data) } == true)
    }

    /// A NUL byte in a header: libcurl 7.88 refuses the response. The download
    /// fails as a network error, and the JSON Lines stay JSON.
    @Test func nulByteInAHeaderFailsCleanly() async throws {
        let run = try await DLPipeRun.run(["get", server.url("/bad-header"), "-d", out, "--json", "--retries", "0"])
        #expect(run.status == 1)
        let failed = run.events("failed")
        #expect(failed.count == 1, "\(run.stdout)")
        #expect(failed.first?["kind"] as? String == "network")
        #expect(run.events.count == run.stdout.split(separator: "\n").count, "every line is JSON")
        #expect(NameChecks.outputProblem(run.stdout + run.stderr) == nil)
        #expect(listing(out).isEmpty)
    }

    /// Invalid UTF-8 in headers (no NUL): the bytes are read as Latin-1, the
    /// download succeeds, and the name and the JSON carry them escaped or decoded.
    @Test func invalidUTF8InHeadersIsReadAsLatin1() async throws {
        let run = try await DLPipeRun.run(["get", server.url("/bad-header?nul=0"), "-d", out, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.events.count == run.stdout.split(separator: "\n").count, "every line is JSON")
        #expect(!run.stdout.contains("\u{FFFD}"), "no invalid UTF-8 reached stdout")
        let name = "bad\u{FF}\u{FE}\u{C0}name.txt"
        #expect(run.events("response").first?["filename"] as? String == name)
        #expect(sameBytes(out + "/" + name, Array("ok".utf8)))
    }

    /// Retry-After far away (seconds, a date in 2100, more digits than an Int):
    /// capped at 300 s, and the error says so. --retries 0 so nobody waits.
    @Test(arguments: ["999999", "Fri, 01 Jan 2100 00:00:00 GMT", "99999999999999999999999"])
    func farRetryAfterIsCappedAndSaysSo(_ retryAfter: String) async throws {
        try server.put("s.bin", randomBytes: 10)
        let escaped = retryAfter.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let run = try await DLPipeRun.run(
            ["get", server.url("/files/s.bin?status=503&retry_after=\(escaped)"), "-d", out, "--json", "--retries", "0"])
        #expect(run.status == 1)
        let failed = try #require(run.events("failed").first)
        #expect(failed["retry_after"] as? Double == 300)
        #expect((failed["message"] as? String ?? "").contains("capped at 300s"), "\(failed)")
    }

    /// With retries left, the `retrying` event reports the capped delay. The run
    /// is killed as soon as it is seen: nobody waits five minutes.
    @Test func retryingEventReportsTheCap() async throws {
        try server.put("s.bin", randomBytes: 10)
        let process = try Subprocess(
            Paths.binary, ["get", server.url("/files/s.bin?status=503&retry_after=999999"), "-d", out, "--json"])
        let line = await offThePool { () -> String? in
            while let line = process.readStdoutLine() {
                if line.contains("\"retrying\"") { return line }
            }
            return nil
        }
        let retrying = try line.flatMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        process.signal(SIGKILL)
        #expect(await offThePool { process.waitForExit() } == 128 + SIGKILL)
        #expect(retrying?["delay"] as? Double == 300)
        let message83 = retrying?["message"] as? String ?? ""
        #expect(message83.contains("Retry-After asked for 999999s; capped at 300s"))
    }

    /// A `retrying` hook sees the capped value in e.retry_after and can give up.
    /// (It was the `failed` hook, which ran per attempt until issue 14.)
    @Test func retryingHookSeesTheCappedRetryAfter() async throws {
        try server.put("s.bin", randomBytes: 10)
        let job = try LuaJob()
        try job.write("job.lua", """
            dl.add(dl.var.url)
            dl.on("retrying", function(d, e)
              dl.log("retry_after", e.retry_after)
              return false
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "url=\(server.url("/files/s.bin?status=503&retry_after=999999"))"])
        #expect(run.status == 1)
        #expect(run.logLines(containing: "retry_after\t300").count == 1, "\(run.stderr)")
        #expect(try server.requests(matching: "/files/s.bin").count == 1, "gave up at once")
    }
}
