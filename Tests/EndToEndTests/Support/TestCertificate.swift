import Foundation

/// A self-signed certificate for 127.0.0.1, made by the openssl command for a
/// loopback https server; dlpipe trusts it through `--cacert`.
struct TestCertificate {
    let certificate: String
    let key: String

    static func make() throws -> TestCertificate {
        let directory = try TempDir.make("tls")
        let made = TestCertificate(certificate: directory + "/cert.pem", key: directory + "/key.pem")
        let openssl = try Subprocess("/usr/bin/env", [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", made.key, "-out", made.certificate, "-days", "2", "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1",
        ])
        let result = openssl.finish()
        guard result.status == 0 else { throw TestFailure("openssl could not make a certificate: \(result.stderr)") }
        return made
    }
}
