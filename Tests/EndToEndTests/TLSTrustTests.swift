import Foundation
import Testing

/// Whom https trusts, against nginx with a private CA: an untrusted
/// certificate fails at once with curl's reason (kind `tls`, not retried);
/// `--cacert`, `CURL_CA_BUNDLE` and `SSL_CERT_FILE` trust the CA as in curl;
/// `-k` trusts anything and says so on every run.
@Suite struct TLSTrustTests {
    let nginx: Nginx
    let dir = Nginx.uniquePath()

    init() throws { nginx = try Nginx.shared() }

    @Test func anUntrustedCertificateFailsOnceWithCurlsReason() async throws {
        try nginx.put(dir + "/u.bin", randomBytes: 100)
        let out = try TempDir.make("tls-untrusted")
        // A CA bundle that does not hold the test CA: the run's own, not the machine's.
        let other = try TestCA.make(names: [])
        let run = try await DLPipeRun.run(
            ["get", nginx.url(dir + "/u.bin"), "-d", out, "--json", "--cacert", other.certificate])
        #expect(run.status == 1)
        let failed = run.events("failed").first ?? [:]
        #expect(failed["kind"] as? String == "tls", "\(failed)")
        let message = failed["message"] as? String ?? ""
        // curl's error buffer: "SSL certificate problem: unable to get local issuer certificate".
        #expect(message.contains("SSL certificate problem"), "\(message)")
        #expect(message.contains(nginx.url(dir + "/u.bin")), "\(message)")
        #expect(run.events("retrying").isEmpty)
        #expect(listing(out).isEmpty)
    }

    @Test(arguments: ["CURL_CA_BUNDLE", "SSL_CERT_FILE"]) func theEnvironmentsBundleIsTrusted(variable: String) async throws {
        let data = try nginx.put(dir + "/\(variable).bin", randomBytes: 3000)
        let out = try TempDir.make("tls-env")
        // Only this variable names a bundle (this machine may set both: CURL_CA_BUNDLE wins, as in curl).
        var environment = ["CURL_CA_BUNDLE": "", "SSL_CERT_FILE": ""]
        environment[variable] = nginx.ca.certificate
        let run = try await DLPipeRun.run(["get", nginx.url(dir + "/\(variable).bin"), "-d", out], environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/\(variable).bin", data))
    }

    @Test func cacertWinsOverTheEnvironment() async throws {
        try nginx.put(dir + "/w.bin", randomBytes: 100)
        let out = try TempDir.make("tls-env-cacert")
        let other = try TestCA.make(names: [])
        let run = try await DLPipeRun.run(
            ["get", nginx.url(dir + "/w.bin"), "-d", out, "--cacert", other.certificate, "--json"],
            environment: ["CURL_CA_BUNDLE": nginx.ca.certificate])
        #expect(run.status == 1)
        #expect(run.events("failed").first?["kind"] as? String == "tls")
    }

    @Test func insecureTrustsAnythingAndWarnsEveryRun() async throws {
        let data = try nginx.put(dir + "/k.bin", randomBytes: 3000)
        let out = try TempDir.make("tls-insecure")
        for _ in 0..<2 {
            let run = try await DLPipeRun.run(["get", nginx.url(dir + "/k.bin"), "-d", out, "-k", "-q"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.contains("warning: --insecure"), "even with -q: \(run.stderr)")
        }
        #expect(sameBytes(out + "/k.bin", data))
        let quiet = try await DLPipeRun.run(["get", nginx.url(dir + "/k.bin"), "-d", out, "--cacert", nginx.ca.certificate])
        #expect(!quiet.stderr.contains("warning"), "no warning without -k: \(quiet.stderr)")
    }
}
