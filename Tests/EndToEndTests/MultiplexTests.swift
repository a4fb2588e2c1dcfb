import Foundation
import Testing

/// HTTP/2 over TLS: many files from one host share one connection
/// (CURLOPT_PIPEWAIT: transfers wait for the first connection instead of
/// each opening its own), as nginx's `$connection` shows.
@Suite struct MultiplexTests {
    @Test func manyFilesToOneHostUseFewConnections() async throws {
        let nginx = try Nginx.shared()
        let dir = Nginx.uniquePath()
        let out = try TempDir.make("multiplex")
        var urls: [String] = []
        for index in 0..<40 {
            try nginx.put(dir + "/f\(index).bin", randomBytes: 20_000, seed: UInt64(index))
            urls.append(nginx.url(dir + "/f\(index).bin"))
        }
        let run = try await DLPipeRun.run(
            ["get"] + urls + ["-d", out, "--cacert", nginx.ca.certificate, "-j", "16", "--per-host", "16", "-q"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(listing(out).count == 40)
        let logged = nginx.requests(matching: dir)
        #expect(logged.count == 40)
        #expect(logged.allSatisfy { $0.proto == "HTTP/2.0" })
        let connections = Set(logged.map(\.connection))
        // Without PIPEWAIT the first wave opens one connection per transfer (16).
        #expect(connections.count <= 2, "\(connections.count) connections for 40 files")
    }
}
