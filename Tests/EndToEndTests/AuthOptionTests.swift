import Foundation
import Testing

/// `-u`, `--netrc`, `--netrc-file` and `--anyauth` against nginx's Basic auth
/// (`/basic/`), and credentials that never follow a redirect to another host.
@Suite struct AuthOptionTests {
    let nginx: Nginx
    let dir = Nginx.uniquePath()
    let out: String

    init() throws {
        nginx = try Nginx.shared()
        out = try TempDir.make("auth")
    }

    private var basicHeader: String {
        "Basic " + Data("\(Nginx.user):\(Nginx.password)".utf8).base64EncodedString()
    }

    @Test func userGivesCredentialsAndWithoutThemItIs401() async throws {
        let data = try nginx.put("basic" + dir + "/u.bin", randomBytes: 3000)
        let url = nginx.url("/basic" + dir + "/u.bin")
        let refused = try await DLPipeRun.run(["get", url, "-d", out, "--cacert", nginx.ca.certificate, "--json"])
        #expect(refused.status == 1)
        #expect(refused.events("failed").first?["status"] as? Int == 401)
        let run = try await DLPipeRun.run(
            ["get", url, "-d", out, "--cacert", nginx.ca.certificate, "-u", "\(Nginx.user):\(Nginx.password)"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/u.bin", data))
        #expect(nginx.requests(matching: "/basic" + dir).last?.authorization == basicHeader)
    }

    @Test func netrcFileAndHomeNetrcGiveCredentialsPerHost() async throws {
        let data = try nginx.put("basic" + dir + "/n.bin", randomBytes: 3000)
        let home = try TempDir.make("auth-home")
        let netrc = home + "/.netrc"
        try Data("machine 127.0.0.1 login \(Nginx.user) password \(Nginx.password)\n".utf8)
            .write(to: URL(fileURLWithPath: netrc))
        chmod(netrc, 0o600)
        let url = nginx.url("/basic" + dir + "/n.bin")
        let fromFile = try await DLPipeRun.run(
            ["get", url, "-d", out, "--cacert", nginx.ca.certificate, "--netrc-file", netrc, "-o", "file.bin"])
        #expect(fromFile.status == 0, "\(fromFile.stderr)")
        #expect(sameBytes(out + "/file.bin", data))
        let fromHome = try await DLPipeRun.run(
            ["get", url, "-d", out, "--cacert", nginx.ca.certificate, "--netrc", "-o", "home.bin"],
            environment: ["HOME": home])
        #expect(fromHome.status == 0, "\(fromHome.stderr)")
        #expect(sameBytes(out + "/home.bin", data))
        // Without --netrc the file in HOME is not read.
        let without = try await DLPipeRun.run(
            ["get", url, "-d", out, "--cacert", nginx.ca.certificate, "-o", "none.bin", "--json"],
            environment: ["HOME": home])
        #expect(without.status == 1)
        #expect(without.events("failed").first?["status"] as? Int == 401)
    }

    @Test func anyauthAsksFirstThenUsesWhatTheServerOffers() async throws {
        let data = try nginx.put("basic" + dir + "/a.bin", randomBytes: 3000)
        let run = try await DLPipeRun.run([
            "get", nginx.url("/basic" + dir + "/a.bin"), "-d", out, "--cacert", nginx.ca.certificate,
            "-u", "\(Nginx.user):\(Nginx.password)", "--anyauth",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/a.bin", data))
        // The first request goes without credentials (curl learns the scheme from the 401).
        let logged = nginx.requests(matching: "/basic" + dir + "/a.bin")
        #expect(logged.map(\.status) == [401, 200], "\(logged)")
        #expect(logged.map(\.authorization) == ["", basicHeader])
    }

    @Test func digestAnswersTheServersChallenge() async throws {
        // nginx has no Digest auth: the fault server's /digest/ has (alice, secret).
        let server = try FaultServer()
        let data = try server.put("d.bin", randomBytes: 5000)
        let url = server.url("/digest/d.bin")
        let basic = try await DLPipeRun.run(["get", url, "-d", out, "-u", "alice:secret", "--json"])
        #expect(basic.status == 1, "Basic is not what the server takes")
        #expect(basic.events("failed").first?["status"] as? Int == 401)
        let run = try await DLPipeRun.run(["get", url, "-d", out, "-u", "alice:secret", "--digest"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/d.bin", data))
        let headers = try server.requests(matching: "/digest/").map { ($0["headers"] as? [String: String])?["authorization"] ?? "" }
        #expect(headers.filter { $0.hasPrefix("Digest ") && $0.contains("username=\"alice\"") }.count == 1, "\(headers)")
        #expect(!headers.contains { $0.contains("secret") }, "the password itself never travels")
    }

    @Test func credentialsNeverFollowARedirectToAnotherHost() async throws {
        try nginx.put("basic" + dir + "/r.bin", host: "a.test", randomBytes: 100)
        let target = nginx.url("/basic" + dir + "/r.bin", host: "a.test")
        let run = try await DLPipeRun.run([
            "get", nginx.url("/redirect?to=" + target), "-d", out, "--cacert", nginx.ca.certificate,
            "--resolve", "a.test:\(nginx.tlsPort):127.0.0.1", "-u", "\(Nginx.user):\(Nginx.password)", "--json",
        ])
        #expect(run.status == 1, "a.test gets no credentials and answers 401")
        #expect(run.events("failed").first?["status"] as? Int == 401)
        let first = nginx.requests(matching: "/redirect?to=" + target)
        #expect(first.map(\.authorization) == [basicHeader], "the requested host gets them")
        let redirected = nginx.requests(matching: "/basic" + dir + "/r.bin")
        #expect(redirected.count == 1)
        #expect(redirected.allSatisfy { $0.host == "a.test" && $0.authorization.isEmpty }, "\(redirected)")
    }
}
