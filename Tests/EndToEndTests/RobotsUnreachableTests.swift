import Foundation
import Testing

/// A robots.txt that cannot be read (5xx, 429, no answer) disallows
/// everything (RFC 9309): the run says so once per host with the cause, even
/// with `-q`, which hides the per-file skip lines. A 4xx allows everything
/// and says nothing.
@Suite struct RobotsUnreachableTests {
    private func server(robotsStatus: Int) throws -> FaultServer {
        let server = try FaultServer()
        try server.put("a.bin", randomBytes: 100)
        try server.put("b.bin", randomBytes: 100, seed: 2)
        try server.put("robots.status", bytes: Array("\(robotsStatus)\n".utf8))
        return server
    }

    private func hostPort(_ url: String) -> String {
        URLComponents(string: url).map { "\($0.host ?? ""):\($0.port ?? 0)" } ?? ""
    }

    @Test func aServerErrorIsNamedOnceForTheHostEvenWithQuiet() async throws {
        let server = try server(robotsStatus: 503)
        let urls = [server.url("/files/a.bin"), server.url("/files/b.bin")]
        let quiet = try await DLPipeRun.run(["get", "--robots", "-q", "-d", try TempDir.make("robots-503-q")] + urls)
        #expect(quiet.status == 0, "skips, not failures: \(quiet.stderr)")
        let warning = "dlpipe: warning: robots.txt for \(hostPort(urls[0])) unreachable: HTTP 503; 2 downloads skipped"
        #expect(quiet.stderr.components(separatedBy: warning).count == 2, "once, with -q: \(quiet.stderr)")
        #expect(!quiet.stderr.contains("skipped http"), "-q still hides the per-file lines: \(quiet.stderr)")
        let json = try await DLPipeRun.run(["get", "--robots", "--json", "-d", try TempDir.make("robots-503-json")] + urls)
        let messages = json.events("warning").compactMap { $0["message"] as? String }
        #expect(messages.count == 1 && messages.first?.hasPrefix("robots.txt for \(hostPort(urls[0])) unreachable: HTTP 503") == true,
                "\(json.stdout)")
        #expect(json.events("skipped").count == 2 && json.events("skipped").allSatisfy { $0["reason"] as? String == "robots.txt" })
        #expect(try server.requests(matching: "/files/").isEmpty)
    }

    @Test func aRefusedConnectionIsNamed() async throws {
        let port = try LoopbackDaemon.refusingPort()
        let url = "http://127.0.0.1:\(port)/files/a.bin"
        let run = try await DLPipeRun.run(["get", "--robots", "-q", "-d", try TempDir.make("robots-refused"), url])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("robots.txt for 127.0.0.1:\(port) unreachable: connection refused; 1 download skipped"),
                "\(run.stderr)")
    }

    @Test func aClientErrorAllowsEverythingWithoutAWarning() async throws {
        let server = try server(robotsStatus: 403)
        let run = try await DLPipeRun.run(["get", "--robots", "-q", "-d", try TempDir.make("robots-403"), server.url("/files/a.bin")])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!run.stderr.contains("warning"), "\(run.stderr)")
        #expect(try server.requests(matching: "/files/a.bin").count == 1, "a 4xx allows everything")
    }
}
