import Foundation
import Testing

/// `--resolve` and `--connect-to` against nginx's virtual hosts: the name the
/// user gave is the one the server sees (Host, TLS name) and the one dlpipe
/// names and counts the download by.
@Suite struct HostMappingTests {
    let nginx: Nginx
    let dir = Nginx.uniquePath()

    init() throws { nginx = try Nginx.shared() }

    @Test func resolveSendsANameToAnAddress() async throws {
        let data = try nginx.put(dir + "/r.bin", host: "b.test", randomBytes: 4000)
        let out = try TempDir.make("resolve")
        let run = try await DLPipeRun.run([
            "get", "https://b.test:\(nginx.tlsPort)\(dir)/r.bin", "-d", out, "--cacert", nginx.ca.certificate,
            "--resolve", "b.test:\(nginx.tlsPort):127.0.0.1", "--json",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/r.bin", data))
        #expect(nginx.requests(matching: dir + "/r.bin").map(\.host) == ["b.test"])
        #expect((run.events("finished").first?["url"] as? String)?.hasPrefix("https://b.test:") == true)
    }

    @Test func connectToSendsAHostAndPortElsewhere() async throws {
        let data = try nginx.put(dir + "/c.bin", host: "a.test", randomBytes: 4000)
        let out = try TempDir.make("connect-to")
        // The URL names port 443, where nothing of ours listens: curl connects to nginx instead.
        let run = try await DLPipeRun.run([
            "get", "https://a.test\(dir)/c.bin", "-d", out, "--cacert", nginx.ca.certificate,
            "--connect-to", "a.test:443:127.0.0.1:\(nginx.tlsPort)",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/c.bin", data))
        #expect(nginx.requests(matching: dir + "/c.bin").map(\.host) == ["a.test"])
    }

    @Test(arguments: [
        ["--resolve", "b.test:443"], ["--resolve", "b.test:port:127.0.0.1"], ["--resolve", ":443:127.0.0.1"],
        ["--connect-to", "a.test:443:127.0.0.1"], ["--connect-to", "a.test:x:127.0.0.1:80"],
        ["-u", "alice"], ["--netrc-file", "/nonexistent/netrc"], ["--digest", "--anyauth"],
        ["--proxy", "ftp://127.0.0.1:21"], ["--max-redirs", "-1"],
    ])
    func badTransportOptionsAreUsageErrors(arguments: [String]) async throws {
        let out = try TempDir.make("transport-usage")
        let run = try await DLPipeRun.run(["get", "http://127.0.0.1:9/x", "-d", out] + arguments)
        #expect(run.status == 2, "\(arguments): \(run.stderr)")
        #expect(run.stderr.contains(arguments[0]), "the message names the option: \(run.stderr)")
        #expect(listing(out).isEmpty)
    }
}
