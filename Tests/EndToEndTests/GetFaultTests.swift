import Foundation
import Testing

/// Server faults: retries, resume, redirects, timeouts, integrity.
@Suite struct GetFaultTests {
    let server: FaultServer
    let out: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("out")
    }

    private func get(_ path: String, _ extra: [String] = []) async throws -> DLPipeRun {
        try await DLPipeRun.run(["get", server.url(path), "-d", out, "--json"] + extra)
    }

    private func rangeHeaders(_ prefix: String) throws -> [String?] {
        try server.requests(matching: prefix).map { ($0["headers"] as? [String: String])?["range"] }
    }

    @Test func truncatedBodyIsRetriedWithRangeAndIfRange() async throws {
        let data = try server.put("t.bin", randomBytes: 1_000_000)
        let run = try await get("/files/t.bin?truncate=300000&truncate_times=1")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/t.bin", data))
        let requests = try server.requests(matching: "/files/t.bin")
        #expect(requests.count == 2)
        let second = requests.last?["headers"] as? [String: String] ?? [:]
        #expect(second["range"] == "bytes=300000-")
        #expect(second["if-range"] != nil)
        #expect(run.events("retrying").count == 1)
    }

    @Test func resetMidBodyResumes() async throws {
        let data = try server.put("r.bin", randomBytes: 500_000)
        let run = try await get("/files/r.bin?reset=200000&reset_times=2")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/r.bin", data))
        #expect(try rangeHeaders("/files/r.bin").dropFirst().allSatisfy { $0?.hasPrefix("bytes=") == true })
    }

    @Test func serverIgnoringRangeRestartsFromZero() async throws {
        let data = try server.put("n.bin", randomBytes: 400_000)
        let run = try await get("/files/n.bin?no_range=1&truncate=150000&truncate_times=1")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/n.bin", data), "a 200 to a range request restarts: never a mixed file")
    }

    @Test func changedResourceRestartsInsteadOfMixing() async throws {
        try server.put("c.bin", randomBytes: 400_000, seed: 1)
        let v2 = try server.put("c.bin.v2", randomBytes: 400_000, seed: 2)
        let run = try await get("/files/c.bin?truncate=100000&truncate_times=1&swap_after=1")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/c.bin", v2), "the new version, whole")
    }

    @Test func lyingContentLengthFailsAndLeavesNoFile() async throws {
        try server.put("l.bin", randomBytes: 10_000)
        let run = try await get("/files/l.bin?lie_length=20000", ["--retries", "1"])
        #expect(run.status == 1)
        #expect(run.events("failed").first?["kind"] as? String == "network")
        #expect(!listing(out).contains("l.bin"), "a short body is never a success")
        // The retry asks for the rest (bytes=10000-), gets 416 (there is no rest),
        // and starts over at once within that attempt: three requests in all.
        let ranges = try server.requests(matching: "/files/l.bin").map { ($0["headers"] as? [String: String])?["range"] }
        #expect(ranges == [nil, "bytes=10000-", nil], "retried once")
    }

    @Test func chunkedBodyCutShortIsNotASuccess() async throws {
        let data = try server.put("k.bin", randomBytes: 100_000)
        let cut = try await get("/files/k.bin?chunked=1&truncate=50000", ["--retries", "0"])
        #expect(cut.status == 1)
        #expect((cut.stdout + cut.stderr).contains("was cut off: the connection closed before its end"), "\(cut.stdout)")
        #expect(!(cut.stdout + cut.stderr).contains("Content-Length"), "a chunked body has none: \(cut.stdout)")
        #expect(!listing(out).contains("k.bin"))
        #expect(listing(out) == ["k.bin.part"], "a network failure keeps its part file for the next run")
        let wholeDir = try TempDir.make("chunked")
        let whole = try await DLPipeRun.run(["get", server.url("/files/k.bin?chunked=1"), "-d", wholeDir])
        #expect(whole.status == 0, "\(whole.stderr)")
        #expect(sameBytes(wholeDir + "/k.bin", data))
    }

    @Test func serviceUnavailableHonoursRetryAfter() async throws {
        let data = try server.put("s.bin", randomBytes: 1000)
        let run = try await get("/files/s.bin?status=503&fail_times=1&retry_after=1")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/s.bin", data))
        let retry = run.events("retrying").first
        #expect(retry?["status"] as? Int == 503)
        #expect((retry?["delay"] as? Double ?? 0) >= 1, "waits at least Retry-After")
    }

    @Test func tooManyRequestsIsRetriedButNotFoundIsNot() async throws {
        try server.put("q.bin", randomBytes: 10)
        let throttled = try await get("/files/q.bin?status=429&fail_times=2", ["--retries", "3"])
        #expect(throttled.status == 0, "\(throttled.stderr)")
        let missing = try await get("/files/none.bin", ["--retries", "3"])
        #expect(missing.status == 1)
        #expect(missing.events("failed").first?["status"] as? Int == 404)
        #expect(try server.requests(matching: "/files/none.bin").count == 1, "4xx fails at once")
    }

    @Test func persistentServerErrorSpendsTheRetryBudget() async throws {
        try server.put("e.bin", randomBytes: 10)
        let run = try await get("/files/e.bin?status=500", ["--retries", "2"])
        #expect(run.status == 1)
        #expect(try server.requests(matching: "/files/e.bin").count == 3)
        #expect(run.events("failed").count == 1)
        #expect(listing(out).isEmpty)
    }

    @Test func stallFailsTheAttemptAfterTheTimeout() async throws {
        let data = try server.put("st.bin", randomBytes: 200_000)
        let run = try await get("/files/st.bin?stall=50000&stall_times=1", ["--timeout", "1"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.events("retrying").first?["kind"] as? String == "timeout")
        #expect(sameBytes(out + "/st.bin", data))
    }

    @Test func redirectChainIsFollowed() async throws {
        let data = try server.put("d.bin", randomBytes: 2000)
        let run = try await get("/redirect/5/files/d.bin")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/d.bin", data))
    }

    @Test func redirectLoopAndLongChainsFail() async throws {
        try server.put("d.bin", randomBytes: 10)
        let loop = try await get("/loop", ["--retries", "0"])
        #expect(loop.status == 1)
        let message130 = loop.events("failed").first?["message"] as? String ?? ""
        #expect(message130.contains("redirects"))
        let long = try await get("/redirect/11/files/d.bin", ["--retries", "0"])
        #expect(long.status == 1)
        #expect(listing(out).isEmpty)
    }

    @Test(arguments: ["file:///etc/passwd", "ftp://127.0.0.1/x", "gopher://127.0.0.1/x"])
    func redirectToAnotherSchemeIsRefused(_ target: String) async throws {
        let run = try await get("/redirect-to?url=\(target)", ["--retries", "0"])
        #expect(run.status == 1)
        let message140 = run.events("failed").first?["message"] as? String ?? ""
        #expect(message140.contains("only http and https"))
        #expect(listing(out).isEmpty)
    }

    @Test func credentialsStayWithTheFirstHost() async throws {
        let other = try FaultServer()
        try other.put("x.txt", bytes: Array("x".utf8))
        let target = other.url("/files/x.txt")
        let run = try await DLPipeRun.run(
            ["get", server.url("/redirect-to?url=\(target)"), "-d", out,
             "-H", "Authorization: Bearer secret", "-H", "X-Trace: 7"])
        #expect(run.status == 0, "\(run.stderr)")
        let first = try server.requests(matching: "/redirect-to").first?["headers"] as? [String: String]
        #expect(first?["authorization"] == "Bearer secret")
        let second = try other.requests(matching: "/files/x.txt").first?["headers"] as? [String: String]
        #expect(second != nil)
        #expect(second?["authorization"] == nil, "no Authorization to another host")
        #expect(second?["x-trace"] == "7")
    }

    @Test func credentialsInTheURLAreNeverPrinted() async throws {
        let url = "http://user:s3cret@127.0.0.1:\(server.port)/files/none.bin"
        let lines = try await DLPipeRun.run(["get", url, "-d", out])
        let json = try await DLPipeRun.run(["get", url, "-d", out, "--json"])
        #expect(lines.status == 1 && json.status == 1)
        #expect(!lines.stderr.contains("s3cret") && !json.stdout.contains("s3cret") && !json.stderr.contains("s3cret"))
        #expect(lines.stderr.contains("http://***@127.0.0.1"))
        let sent = try server.requests(matching: "/files/none.bin").first?["headers"] as? [String: String]
        #expect(sent?["authorization"]?.hasPrefix("Basic ") == true, "the credentials are still used")
    }

    @Test func aHeaderBlockThatNeverEndsTimesOut() async throws {
        let run = try await get("/endless-headers", ["--timeout", "1", "--retries", "0"])
        #expect(run.status == 1)
        #expect(run.events("failed").first?["kind"] as? String == "timeout", "\(run.stdout)")
        #expect(listing(out).isEmpty)
    }

    @Test func hugeHeadersAndAZeroByteBodyAreFine() async throws {
        let huge = try await get("/huge-headers")
        #expect(huge.status == 0, "\(huge.stderr)")
        #expect(sameBytes(out + "/huge-headers", Array("ok".utf8)))
        try server.put("empty.bin", bytes: [])
        for (path, name) in [("/files/empty.bin", "empty.bin"), ("/files/empty.bin?chunked=1", "empty.1.bin")] {
            let empty = try await get(path)
            #expect(empty.status == 0, "\(path): \(empty.stderr)")
            #expect(empty.events("finished").first?["bytes"] as? Int == 0)
            var info = stat()
            #expect(lstat(out + "/" + name, &info) == 0 && info.st_size == 0, "\(path): an empty file under its name")
        }
        #expect(!listing(out).contains { $0.hasSuffix(".part") })
    }
}
