import Foundation
import Testing

/// `-x/--proxy`, `--noproxy` and curl's proxy variables, through tinyproxy to
/// nginx; and proxy failures named as the proxy's (kind `proxy`), not retried.
@Suite struct ProxyTests {
    let nginx: Nginx
    let proxy: Tinyproxy
    let dir = Nginx.uniquePath()
    let out: String

    init() throws {
        nginx = try Nginx.shared()
        proxy = try Tinyproxy()
        out = try TempDir.make("proxy-out")
    }

    @Test func anHttpsDownloadTunnelsThroughTheProxy() async throws {
        let data = try nginx.put(dir + "/s.bin", randomBytes: 70_000)
        let run = try await DLPipeRun.run([
            "get", nginx.url(dir + "/s.bin"), "-d", out, "--proxy", proxy.url(), "--cacert", nginx.ca.certificate,
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/s.bin", data))
        #expect(proxy.carried("CONNECT 127.0.0.1:\(nginx.tlsPort)").count >= 1)
    }

    @Test func noproxyGoesDirect() async throws {
        let data = try nginx.put(dir + "/d.bin", randomBytes: 1000)
        let run = try await DLPipeRun.run([
            "get", nginx.url(dir + "/d.bin", tls: false), "-d", out, "-x", proxy.url(), "--noproxy", "example.org,127.0.0.1",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/d.bin", data))
        #expect(proxy.carried(dir).isEmpty, "the proxy carried \(proxy.carried(dir))")
        #expect(nginx.requests(matching: dir + "/d.bin").count == 1)
    }

    @Test func theProxyVariablesWorkAsInCurl() async throws {
        let data = try nginx.put(dir + "/e.bin", randomBytes: 1000)
        let viaProxy = try await DLPipeRun.run(
            ["get", nginx.url(dir + "/e.bin", tls: false), "-d", out], environment: ["http_proxy": proxy.url()])
        #expect(viaProxy.status == 0, "\(viaProxy.stderr)")
        #expect(sameBytes(out + "/e.bin", data))
        #expect(proxy.carried(dir + "/e.bin").count == 1)
        // no_proxy exempts the host; the file is then fetched again direct.
        let other = try TempDir.make("proxy-env")
        let direct = try await DLPipeRun.run(
            ["get", nginx.url(dir + "/e.bin", tls: false), "-d", other],
            environment: ["http_proxy": proxy.url(), "no_proxy": "localhost,127.0.0.0/8"])
        #expect(direct.status == 0, "\(direct.stderr)")
        #expect(proxy.carried(dir + "/e.bin").count == 1, "not carried a second time")
        #expect(nginx.requests(matching: dir + "/e.bin").count == 2)
    }

    @Test func aJobNamesItsProxyAndTheCommandLineWins() async throws {
        let data = try nginx.put(dir + "/j.bin", randomBytes: 1500)
        let job = try LuaJob()
        let dead = try LoopbackDaemon.refusingPort()
        try job.write("job.lua", """
            dl.config{ proxy = "\(proxy.url())", noproxy = "example.org" }
            dl.add("\(nginx.url(dir + "/j.bin", tls: false))")
            """)
        let viaJob = try await job.run("job.lua", out: out)
        #expect(viaJob.status == 0, "\(viaJob.stderr)")
        #expect(sameBytes(out + "/j.bin", data))
        #expect(proxy.carried(dir + "/j.bin").count == 1)
        // -x on the command line replaces the job's proxy: a dead one fails.
        let other = try TempDir.make("proxy-job")
        let overridden = try await job.run("job.lua", out: other, ["-x", "http://127.0.0.1:\(dead)"])
        #expect(overridden.status == 1)
        #expect(overridden.events("failed").first?["kind"] as? String == "proxy")
        #expect(proxy.carried(dir + "/j.bin").count == 1, "the job's proxy was not used")
    }

    @Test func aDeadProxyIsNamedAndNotRetried() async throws {
        try nginx.put(dir + "/x.bin", randomBytes: 100)
        let dead = try LoopbackDaemon.refusingPort()
        let run = try await DLPipeRun.run([
            "get", nginx.url(dir + "/x.bin", tls: false), "-d", out, "-x", "http://127.0.0.1:\(dead)", "--json",
        ])
        #expect(run.status == 1)
        let failed = run.events("failed").first ?? [:]
        #expect(failed["kind"] as? String == "proxy", "\(failed)")
        let message = failed["message"] as? String ?? ""
        #expect(message.contains("proxy http://127.0.0.1:\(dead)"), "\(message)")
        #expect(message.contains("port \(dead)"), "curl's own text stays: \(message)")
        #expect(run.events("retrying").isEmpty)
        #expect(nginx.requests(matching: dir + "/x.bin").isEmpty)
    }
}

/// A proxy that refuses: CONNECT to a port it does not allow (403), and a
/// proxy that wants credentials (407), over http and https.
@Suite struct ProxyRefusalTests {
    let nginx: Nginx
    let dir = Nginx.uniquePath()
    let out: String

    init() throws {
        nginx = try Nginx.shared()
        out = try TempDir.make("proxy-refusal")
    }

    @Test func aRefusedConnectIsTheProxysAndNotRetried() async throws {
        let proxy = try Tinyproxy(connectPorts: [443])
        try nginx.put(dir + "/c.bin", randomBytes: 100)
        let run = try await DLPipeRun.run([
            "get", nginx.url(dir + "/c.bin"), "-d", out, "-x", proxy.url(), "--cacert", nginx.ca.certificate, "--json",
        ])
        #expect(run.status == 1)
        let failed = run.events("failed").first ?? [:]
        #expect(failed["kind"] as? String == "proxy", "\(failed)")
        #expect(failed["status"] as? Int == 403, "\(failed)")
        let message = failed["message"] as? String ?? ""
        #expect(message.contains("the proxy \(proxy.url()) refused"), "\(message)")
        #expect(message.contains("CONNECT"), "curl's text names the tunnel: \(message)")
        #expect(run.events("retrying").isEmpty)
    }

    @Test(arguments: [false, true]) func aProxyWantingCredentialsIsA407OfTheProxy(tls: Bool) async throws {
        let proxy = try Tinyproxy(basicAuth: ("pxuser", "pxpass"))
        let data = try nginx.put(dir + "/a.bin", randomBytes: 2000)
        let url = nginx.url(dir + "/a.bin", tls: tls)
        let refused = try await DLPipeRun.run([
            "get", url, "-d", out, "-x", proxy.url(), "--cacert", nginx.ca.certificate, "--json",
        ])
        #expect(refused.status == 1)
        let failed = refused.events("failed").first ?? [:]
        #expect(failed["kind"] as? String == "proxy", "\(failed)")
        #expect(failed["status"] as? Int == 407, "\(failed)")
        let message = failed["message"] as? String ?? ""
        #expect(message.contains("the proxy") && message.contains("407"), "\(message)")
        #expect(refused.events("retrying").isEmpty)
        let allowed = try await DLPipeRun.run([
            "get", url, "-d", out, "-x", proxy.url(user: "pxuser", password: "pxpass"), "--cacert", nginx.ca.certificate,
        ])
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(sameBytes(out + "/a.bin", data))
        #expect(!allowed.stderr.contains("pxpass"), "the proxy's password is never printed")
    }
}
