import Foundation
import Testing

/// Politeness per host: `--host-delay S` / `dl.config{ host_delay }` spaces the
/// requests to one host (redirect hops included), and a 429 or 503 with
/// Retry-After holds back the whole host, not only the URL that got it.
@Suite struct HostDelayTests {
    private func times(_ server: FaultServer, _ prefix: String) throws -> [Double] {
        try server.requests(matching: prefix).compactMap { $0["time"] as? Double }.sorted()
    }

    @Test func requestsToOneHostAreSpacedRedirectHopsIncluded() async throws {
        let server = try FaultServer()
        for i in 1...3 { try server.put("s\(i).bin", randomBytes: 200, seed: UInt64(i)) }
        let out = try TempDir.make("host-delay")
        let delay = 0.4
        // Five requests to one host: three files, one of them behind two redirect hops.
        let urls = [server.url("/files/s1.bin"), server.url("/redirect/1/files/s2.bin"), server.url("/files/s3.bin")]
        let run = try await DLPipeRun.run(
            ["get"] + urls + ["-d", out, "-j", "8", "--per-host", "8", "--host-delay", String(delay)])
        #expect(run.status == 0, "\(run.stderr)")
        let seen = try times(server, "/")
        #expect(seen.count == 5, "\(seen)")
        // The lower bound: N requests take at least (N-1) * S.
        #expect(run.seconds >= 4 * delay, "\(run.seconds) s")
        // At the server, from the first request to the last: the starts are
        // (N-1) * S apart at the client; a loopback connection's setup (slower
        // for the first under load) may move one arrival by a little.
        if let first = seen.first, let last = seen.last {
            #expect(last - first >= 4 * delay - 0.1, "\(seen)")
        }
    }

    /// Three hosts redirect at once to a fourth: the hops to it are requests
    /// to it and wait their turns there. With `--per-host 1` two of them are
    /// parked behind the first (Scheduler.hop) and take their turns when they
    /// get the slot; without the delay they would follow within milliseconds.
    @Test(arguments: [1, 4]) func redirectHopsToAHostWaitTheirTurnsParkedOrNot(perHost: Int) async throws {
        let target = try FaultServer()
        let homes = try (1...3).map { _ in try FaultServer() }
        var urls: [String] = []
        var bodies: Set<[UInt8]> = []
        for (index, home) in homes.enumerated() {
            bodies.insert(try target.put("t\(index).bin", randomBytes: 300, seed: UInt64(index + 1)))
            urls.append(home.url("/redirect-to?url=" + target.url("/files/t\(index).bin")))
        }
        let out = try TempDir.make("host-delay-hops")
        let delay = 0.4
        let run = try await DLPipeRun.run(
            ["get"] + urls + ["-d", out, "-j", "8", "--per-host", String(perHost), "--host-delay", String(delay)])
        #expect(run.status == 0, "\(run.stderr)")
        // All three files (named from the asked URL: redirect-to, then numbered).
        let names = try FileManager.default.contentsOfDirectory(atPath: out).filter { !$0.hasPrefix(".") }
        #expect(Set(names.compactMap { FileManager.default.contents(atPath: out + "/" + $0).map { [UInt8]($0) } }) == bodies, "\(names)")
        let seen = try times(target, "/files/")
        #expect(seen.count == 3, "\(seen)")
        // The hops left their hosts together (each host's first request), and
        // reached the target one turn apart.
        if seen.count == 3 {
            #expect(seen[2] - seen[0] >= 2 * delay - 0.1, "\(seen)")
            #expect(seen[1] - seen[0] >= delay / 2 && seen[2] - seen[1] >= delay / 2, "\(seen)")
        }
    }

    @Test func aRetryAfterHoldsBackTheWholeHost() async throws {
        let server = try FaultServer()
        try server.put("a.bin", randomBytes: 200)
        try server.put("b.bin", randomBytes: 200, seed: 2)
        let out = try TempDir.make("host-delay")
        let job = try LuaJob()
        // a.bin fails at once (no retries) with Retry-After: 2; its failed
        // handler adds b.bin on the same host, which must wait out those 2 s.
        try job.write("job.lua", """
            dl.config{ retries = 0 }
            dl.add("\(server.url("/files/a.bin?status=503&retry_after=2"))")
            dl.on("failed", function(d, e)
              dl.add("\(server.url("/files/b.bin"))")
              return dl.handled()
            end)
            """)
        let run = try await job.run("job.lua", out: out)
        #expect(run.status == 0, "\(run.stderr)")
        let a = try times(server, "/files/a.bin")
        let b = try times(server, "/files/b.bin")
        #expect(a.count == 1 && b.count == 1, "\(a) \(b)")
        if let first = a.first, let second = b.first {
            #expect(second - first >= 2 - 0.05, "b.bin came \(second - first) s after the 503")
        }
        #expect(sameBytes(out + "/b.bin", TestData.random(200, seed: 2)))
    }

    @Test func requestsAlreadyWaitingForTheirTurnWaitOutARetryAfter() async throws {
        let server = try FaultServer()
        for name in ["a", "b", "c"] { try server.put("\(name).bin", randomBytes: 200) }
        let out = try TempDir.make("host-delay")
        // a.bin gets a 429 with Retry-After: 3 at its turn; b.bin and c.bin
        // reserved their turns (1 s and 2 s later) before it came, and came at
        // those times before the fix. (The engine must read the 429 within the
        // first second: a request that starts before it does cannot be held.)
        let run = try await DLPipeRun.run([
            "get", server.url("/files/a.bin?status=429&fail_times=1&retry_after=3"),
            server.url("/files/b.bin"), server.url("/files/c.bin"), "-d", out, "--host-delay", "1",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let limited = try times(server, "/files/a.bin")
        let others = try times(server, "/files/b.bin") + times(server, "/files/c.bin")
        #expect(limited.count == 2 && others.count == 2, "\(limited) \(others)")
        if let at = limited.first {
            #expect(others.allSatisfy { $0 - at >= 3 - 0.05 }, "429 at \(at), the others at \(others)")
        }
    }

    @Test func aNegativeHostDelayIsAUsageError() async throws {
        let out = try TempDir.make("host-delay")
        let run = try await DLPipeRun.run(["get", "http://127.0.0.1:1/x", "-d", out, "--host-delay", "-1"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("--host-delay"), "\(run.stderr)")
    }
}
