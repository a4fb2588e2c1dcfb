import Foundation

/// A private certificate authority made with the openssl command at test time,
/// and one server certificate it signed for loopback and the fixture's
/// virtual host names. dlpipe trusts it through `--cacert` (or
/// `SSL_CERT_FILE` / `CURL_CA_BUNDLE`); without it every https request fails
/// verification, as against any server with a private CA.
struct TestCA: Sendable {
    /// The authority's certificate (PEM): what a client trusts.
    let certificate: String
    /// The server's certificate (PEM), signed by the authority.
    let serverCertificate: String
    /// The server certificate's private key (PEM).
    let serverKey: String

    /// Makes a fresh authority and a server certificate for 127.0.0.1, ::1,
    /// localhost and `names`.
    static func make(names: [String]) throws -> TestCA {
        let directory = try TempDir.make("ca")
        let made = TestCA(
            certificate: directory + "/ca.pem", serverCertificate: directory + "/server.pem",
            serverKey: directory + "/server.key")
        let caKey = directory + "/ca.key"
        let request = directory + "/server.csr"
        let extensions = directory + "/server.ext"
        let alternatives = (["IP:127.0.0.1", "IP:::1", "DNS:localhost"] + names.map { "DNS:" + $0 })
            .joined(separator: ",")
        try Data("subjectAltName=\(alternatives)\nbasicConstraints=CA:FALSE\n".utf8)
            .write(to: URL(fileURLWithPath: extensions))
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try openssl(["req", "-x509"] + curve + [
            "-keyout", caKey, "-out", made.certificate, "-days", "2", "-subj", "/CN=dlpipe test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
        try openssl(["req", "-new"] + curve + ["-keyout", made.serverKey, "-out", request, "-subj", "/CN=127.0.0.1"])
        try openssl([
            "x509", "-req", "-in", request, "-CA", made.certificate, "-CAkey", caKey, "-CAcreateserial",
            "-out", made.serverCertificate, "-days", "2", "-extfile", extensions,
        ])
        return made
    }

    private static func openssl(_ arguments: [String]) throws {
        let result = try Subprocess("/usr/bin/env", ["openssl"] + arguments, timeout: 60).finish()
        guard result.status == 0 else {
            throw TestFailure("openssl \(arguments.first ?? "") failed: \(result.stderr)")
        }
    }
}
