import Foundation
import Testing

/// https on loopback: a certificate trusted through --cacert, and a redirect
/// from https down to http, which dlpipe refuses end to end.
@Suite struct TLSTests {
    let certificate: TestCertificate
    let secure: FaultServer
    let plain: FaultServer
    let out: String

    init() throws {
        certificate = try TestCertificate.make()
        secure = try FaultServer(tls: certificate)
        plain = try FaultServer()
        out = try TempDir.make("tls-out")
    }

    @Test func httpsWorksWithTheCertificateTrustedAndFailsWithout() async throws {
        let data = try secure.put("s.bin", randomBytes: 50_000)
        let trusted = try await DLPipeRun.run(["get", secure.url("/files/s.bin"), "-d", out, "--cacert", certificate.certificate])
        #expect(trusted.status == 0, "\(trusted.stderr)")
        #expect(sameBytes(out + "/s.bin", data))
        let other = try TempDir.make("tls-untrusted")
        let untrusted = try await DLPipeRun.run(["get", secure.url("/files/s.bin"), "-d", other, "--json", "--retries", "0"])
        #expect(untrusted.status == 1)
        let message = untrusted.events("failed").first?["message"] as? String ?? ""
        #expect(message.lowercased().contains("certificate"), "\(message)")
        #expect(listing(other).isEmpty, "nothing under any name")
    }

    @Test func aRedirectFromHttpsToHttpIsRefused() async throws {
        try plain.put("x.bin", bytes: Array("would travel in clear text\n".utf8))
        let target = plain.url("/files/x.bin")
        let run = try await DLPipeRun.run([
            "get", secure.url("/redirect-to?url=" + target), "-d", out, "--cacert", certificate.certificate,
            "--json", "--retries", "0",
        ])
        #expect(run.status == 1, "\(run.stdout)")
        let failed = run.events("failed").first
        #expect(failed?["kind"] as? String == "http")
        let message42 = failed?["message"] as? String ?? ""
        #expect(message42.contains("https to http"), "\(failed ?? [:])")
        #expect(try plain.requests(matching: "/files/x.bin").isEmpty, "the http URL was never asked")
        #expect(listing(out).isEmpty)
    }

    @Test func aRedirectFromHttpsToHttpsIsFollowed() async throws {
        let data = try secure.put("t.bin", randomBytes: 10_000)
        let run = try await DLPipeRun.run([
            "get", secure.url("/redirect-to?url=" + secure.url("/files/t.bin")), "-d", out,
            "--cacert", certificate.certificate, "-o", "t.bin",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/t.bin", data))
    }
}
