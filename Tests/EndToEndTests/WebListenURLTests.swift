import Foundation
import Testing
import TestSupport

/// `--web` and `dlpipe web --listen` on every address (`0.0.0.0`, `[::]`):
/// the URL printed is one a browser opens (the machine's name, and
/// 127.0.0.1 on this machine), never `http://0.0.0.0:PORT/`, and the line
/// says where the server listens. The loopback URL printed is fetched.
@Suite struct WebListenURLTests {
    let server: FaultServer
    let out: String

    init() throws {
        server = try FaultServer()
        try server.put("s.bin", randomBytes: 100_000, seed: 5)
        out = try TempDir.make("weblisten")
    }

    /// The machine's name as `gethostname` has it.
    private static var hostName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, buffer.count - 1)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    @Test(arguments: [("0.0.0.0:0", "0.0.0.0"), ("[::]:0", "[::]")])
    func everyAddressPrintsURLsABrowserOpens(listen: String, shown: String) async throws {
        let token = "t0ken-for-the-test"
        // A body that stalls keeps the run (and its server) up while the URLs are read.
        let run = try Subprocess(
            Paths.binary,
            ["get", server.url("/files/s.bin?stall=1000"), "-d", out, "--json", "--retries", "0", "--web", listen, "--web-token", token],
            timeout: 60)
        let event = await offThePool { () -> String? in
            while let line = run.readStdoutLine() { if line.contains("\"event\":\"web\"") { return line } }
            return nil
        }
        let line = try #require(event).replacingOccurrences(of: "\\/", with: "/")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let port = try #require(object["port"] as? Int)
        #expect(object["url"] as? String == "http://\(Self.hostName):\(port)/", "\(line)")
        #expect(object["local_url"] as? String == "http://127.0.0.1:\(port)/", "\(line)")
        #expect(object["listen"] as? String == "\(shown):\(port)", "\(line)")
        let local = try #require(object["local_url"] as? String)
        let reply = try await offThePool { Result { try WebReply.fetch(local + "metrics", headers: ["Authorization: Bearer " + token]) } }.get()
        #expect(reply.status == 200 && reply.body.contains("dlpipe_downloads_total"), "the loopback URL opens: \(reply)")
        run.signal(SIGTERM)
        let (_, _, stderr) = await offThePool { run.finish() }
        #expect(stderr.contains(
            "dlpipe: web view at http://\(Self.hostName):\(port)/ (listening on every address, \(shown):\(port); on this machine http://127.0.0.1:\(port)/) (with its token)"),
            "\(stderr)")
        #expect(!stderr.contains("http://0.0.0.0") && !stderr.contains("http://[::]"), "\(stderr)")
    }

    @Test func theFleetViewOnEveryAddressToo() async throws {
        let view = try Subprocess(
            Paths.binary, ["web", out, "--listen", "0.0.0.0:0"], environment: ["DLPIPE_WEB_TOKEN": "fleet-token"], timeout: 60)
        let line = await offThePool { () -> String? in
            while let line = view.readStderrLine() { if line.contains("web view of the") { return line } }
            return nil
        }
        let said = try #require(line)
        let found = try #require(said.firstMatch(of: /listening on every address, 0\.0\.0\.0:(\d+); on this machine (http:\/\/127\.0\.0\.1:\d+\/)\)/), "\(said)")
        #expect(said.contains("at http://\(Self.hostName):\(found.1)/ "), "\(said)")
        let local = String(found.2)
        let reply = try await offThePool {
            Result { try WebReply.fetch(local + "api/view", headers: ["Authorization: Bearer fleet-token"]) }
        }.get()
        #expect(reply.status == 200 && reply.json["kind"] as? String == "directory", "\(reply)")
        view.signal(SIGTERM)
        #expect(await offThePool { view.waitForExit(within: 20) } == 130)
    }
}
