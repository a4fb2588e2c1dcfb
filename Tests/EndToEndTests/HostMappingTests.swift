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

    @Test func perHostCountsTheNameNotTheAddress() async throws {
        // a.test and b.test both lead to 127.0.0.1; --per-host 1 holds per name:
        // a.test's two files one after the other, b.test's beside them.
        let out = try TempDir.make("per-host-names")
        var urls: [String] = []
        for (index, host) in ["a.test", "a.test", "b.test"].enumerated() {
            try nginx.put("slow" + dir + "/\(index).bin", host: host, randomBytes: 120_000, seed: UInt64(index))
            urls.append(nginx.url("/slow" + dir + "/\(index).bin", host: host))
        }
        let run = try await DLPipeRun.run(["get"] + urls + [
            "-d", out, "--cacert", nginx.ca.certificate, "--per-host", "1", "-j", "4",
            "--resolve", "a.test:\(nginx.tlsPort):127.0.0.1", "--resolve", "b.test:\(nginx.tlsPort):127.0.0.1",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let logged = nginx.requests(matching: "/slow" + dir)
        try #require(logged.count == 3)
        func overlap(_ x: Nginx.Request, _ y: Nginx.Request) -> Bool { x.start < y.end && y.start < x.end }
        let onA = logged.filter { $0.host == "a.test" }
        let onB = try #require(logged.first { $0.host == "b.test" })
        try #require(onA.count == 2)
        #expect(!overlap(onA[0], onA[1]), "one at a time on a.test: \(onA)")
        #expect(onA.contains { overlap($0, onB) }, "b.test is another host, though the same address: \(logged)")
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
