import Foundation
import Testing

/// IDN hosts go out in their ASCII form whatever the locale (issue 36): under
/// cron's `C` locale libcurl does not convert them, and such a URL failed
/// with "URL using bad/illegal format". The ASCII form is the URL from then on.
@Suite struct IDNHostTests {
    let server: FaultServer
    let out: String
    /// cron's environment: no UTF-8 anywhere.
    let cLocale = ["LANG": "C", "LC_ALL": "C", "LC_CTYPE": "C"]
    let ascii = "xn--bcher-kva.example"

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("idn")
        try server.put("a.txt", bytes: Array("alpha".utf8))
    }

    private var resolve: [String] { ["--resolve", "\(ascii):\(server.port):127.0.0.1"] }

    @Test(arguments: ["C", "C.UTF-8"])
    func getSendsTheASCIIHostUnderAnyLocale(locale: String) async throws {
        let run = try await DLPipeRun.run(
            ["get", "http://b\u{FC}cher.example:\(server.port)/files/a.txt", "-d", out, "--json"] + resolve,
            environment: ["LANG": locale, "LC_ALL": locale, "LC_CTYPE": locale])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(bytes(at: out + "/a.txt") == Array("alpha".utf8))
        let seen = try server.requests(matching: "/files/a.txt")
        #expect(seen.compactMap { ($0["headers"] as? [String: Any])?["host"] as? String } == ["\(ascii):\(server.port)"])
        #expect(run.events("finished").first?["url"] as? String == "http://\(ascii):\(server.port)/files/a.txt")
    }

    /// `--resolve` and `--connect-to` may name the host as the URL does: its
    /// ASCII form is what they map.
    @Test func resolveAndConnectToTakeTheUnicodeHost() async throws {
        let url = "http://b\u{FC}cher.example:\(server.port)/files/a.txt"
        for mapping in [["--resolve", "b\u{FC}cher.example:\(server.port):127.0.0.1"],
                        ["--connect-to", "b\u{FC}cher.example:\(server.port):127.0.0.1:\(server.port)"]] {
            let dir = try TempDir.make("idn-map")
            let run = try await DLPipeRun.run(["get", url, "-d", dir, "--retries", "0"] + mapping, environment: cLocale)
            #expect(run.status == 0, "\(mapping): \(run.stderr)")
            #expect(bytes(at: dir + "/a.txt") == Array("alpha".utf8), "\(mapping)")
        }
    }

    /// From a job, the two spellings are one download: d.url, the key and
    /// the dedup are the ASCII form's.
    @Test func aJobSeesOneDownloadUnderTheASCIIHost() async throws {
        let job = try LuaJob()
        try job.write("job.lua", """
            local a = dl.add("http://B\u{DC}CHER.example:\(server.port)/files/a.txt")
            local b = dl.add("http://\(ascii):\(server.port)/files/a.txt")
            dl.log("same id: " .. tostring(a == b))
            dl.on("finished", function(d, f) dl.log("url: " .. d.url) end)
            """)
        let run = try await DLPipeRun.run(
            ["run", job.directory + "/job.lua", "-d", out, "--json"] + resolve, environment: cLocale)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.logLines(containing: "same id: true").count == 1, "\(run.stdout)")
        #expect(run.logLines(containing: "url: http://\(ascii):\(server.port)/files/a.txt").count == 1, "\(run.stdout)")
        #expect(try server.requests(matching: "/files/a.txt").count == 1)
    }
}
