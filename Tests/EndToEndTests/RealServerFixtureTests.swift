import Foundation
import Testing

/// The real-server fixture itself: nginx answers over TLS with HTTP/2 from
/// its private CA, for each virtual host; tinyproxy carries requests.
@Suite struct RealServerFixtureTests {
    @Test func nginxServesEachVirtualHostOverHTTP2() async throws {
        let nginx = try Nginx.shared()
        let dir = Nginx.uniquePath()
        let out = try TempDir.make("fixture")
        var arguments = ["get", "-d", out, "--cacert", nginx.ca.certificate]
        for host in Nginx.hosts {
            try nginx.put(dir + "/\(host).txt", host: host, bytes: Array("served by \(host)\n".utf8))
            arguments.append(nginx.url(dir + "/\(host).txt", host: host))
            if host != "127.0.0.1" { arguments += ["--resolve", "\(host):\(nginx.tlsPort):127.0.0.1"] }
        }
        let run = try await DLPipeRun.run(arguments)
        #expect(run.status == 0, "\(run.stderr)")
        for host in Nginx.hosts {
            #expect(bytes(at: out + "/\(host).txt") == Array("served by \(host)\n".utf8))
        }
        let logged = nginx.requests(matching: dir)
        #expect(Set(logged.map(\.host)) == Set(Nginx.hosts))
        #expect(logged.allSatisfy { $0.proto == "HTTP/2.0" }, "\(logged)")
    }

    @Test func tinyproxyCarriesARequest() async throws {
        let nginx = try Nginx.shared()
        let proxy = try Tinyproxy()
        let dir = Nginx.uniquePath()
        let data = try nginx.put(dir + "/p.bin", randomBytes: 5000)
        let out = try TempDir.make("fixture-proxy")
        let run = try await DLPipeRun.run(["get", nginx.url(dir + "/p.bin", tls: false), "-d", out, "-x", proxy.url()])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/p.bin", data))
        #expect(proxy.carried(dir + "/p.bin").count == 1)
    }
}
