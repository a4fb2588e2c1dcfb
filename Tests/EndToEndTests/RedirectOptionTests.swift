import Foundation
import Testing

/// `--max-redirs` (default 10) and `--allow-insecure-redirects`, with
/// nginx's redirect chains (`/hops/N/...` is N + 1 redirects); and the job's
/// `dl.config` keys for both.
@Suite struct RedirectOptionTests {
    let nginx: Nginx
    let dir = Nginx.uniquePath()

    init() throws { nginx = try Nginx.shared() }

    @Test func maxRedirsBoundsTheHops() async throws {
        let data = try nginx.put(dir + "/m.bin", randomBytes: 500)
        let out = try TempDir.make("max-redirs")
        let within = try await DLPipeRun.run([
            "get", nginx.url("/hops/1" + dir + "/m.bin", tls: false), "-d", out, "--max-redirs", "2", "-o", "m.bin",
        ])
        #expect(within.status == 0, "\(within.stderr)")
        #expect(sameBytes(out + "/m.bin", data))
        let beyond = try await DLPipeRun.run([
            "get", nginx.url("/hops/2" + dir + "/m.bin", tls: false), "-d", out, "--max-redirs", "2", "--json",
        ])
        #expect(beyond.status == 1)
        let message = beyond.events("failed").first?["message"] as? String ?? ""
        #expect(message.contains("more than 2 redirects"), "\(message)")
        #expect(nginx.requests(matching: dir + "/m.bin").count == 1, "the file at the third hop was never asked again")
    }

    @Test func theDefaultIsTenRedirects() async throws {
        try nginx.put(dir + "/t.bin", randomBytes: 500)
        let out = try TempDir.make("max-redirs-default")
        let ten = try await DLPipeRun.run(["get", nginx.url("/hops/9" + dir + "/t.bin", tls: false), "-d", out, "-o", "t.bin"])
        #expect(ten.status == 0, "\(ten.stderr)")
        let eleven = try await DLPipeRun.run(["get", nginx.url("/hops/10" + dir + "/t.bin", tls: false), "-d", out, "--json"])
        #expect(eleven.status == 1)
        let message = eleven.events("failed").first?["message"] as? String ?? ""
        #expect(message.contains("more than 10 redirects"), "\(message)")
    }

    @Test func httpsToHttpIsRefusedUnlessAllowed() async throws {
        let data = try nginx.put(dir + "/i.bin", randomBytes: 700)
        let out = try TempDir.make("insecure-redirect")
        let url = nginx.url("/redirect?to=" + nginx.url(dir + "/i.bin", tls: false))
        let refused = try await DLPipeRun.run(["get", url, "-d", out, "--cacert", nginx.ca.certificate, "--json", "-o", "i.bin"])
        #expect(refused.status == 1)
        let message = refused.events("failed").first?["message"] as? String ?? ""
        #expect(message.contains("--allow-insecure-redirects"), "the refusal names the opt-in: \(message)")
        #expect(nginx.requests(matching: dir + "/i.bin").isEmpty)
        let allowed = try await DLPipeRun.run([
            "get", url, "-d", out, "--cacert", nginx.ca.certificate, "--allow-insecure-redirects", "-o", "i.bin",
        ])
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(sameBytes(out + "/i.bin", data))
    }

    @Test func aJobSetsBothInDlConfig() async throws {
        let data = try nginx.put(dir + "/j.bin", randomBytes: 900)
        let job = try LuaJob()
        let out = try TempDir.make("redirect-job")
        try job.write("job.lua", """
            dl.config{ max_redirs = 1, allow_insecure_redirects = true }
            dl.add{ url = "\(nginx.url("/hops/0" + dir + "/j.bin", tls: false))", name = "one.bin" }
            dl.add{ url = "\(nginx.url("/hops/1" + dir + "/j.bin", tls: false))", name = "two.bin" }
            dl.add{ url = "\(nginx.url("/redirect?to=" + nginx.url(dir + "/j.bin", tls: false)))", name = "down.bin" }
            """)
        let run = try await job.run("job.lua", out: out, ["--cacert", nginx.ca.certificate])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(sameBytes(out + "/one.bin", data))
        #expect(sameBytes(out + "/down.bin", data), "https to http allowed by the job")
        #expect(!FileManager.default.fileExists(atPath: out + "/two.bin"))
        #expect(run.events("failed").count == 1)
        // The command line wins over the job.
        let wider = try await job.run("job.lua", out: out, ["--cacert", nginx.ca.certificate, "--max-redirs", "2"])
        #expect(wider.status == 0, "\(wider.stderr)")
        #expect(sameBytes(out + "/two.bin", data))
    }
}
