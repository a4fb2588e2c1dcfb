import Foundation
import Testing

/// URLs with a raw space, non-ASCII characters or a stray `%`, against the
/// fault server: `get` and `dl.add` send them encoded (the server finds the
/// file), and `dl.url.resolve` gives the same URL for the same text.
@Suite struct URLNormalizationRunTests {
    let server: FaultServer
    let names = ["a b.txt", "caf\u{E9} \u{1F600}.txt", "100%.txt"]

    init() throws {
        server = try FaultServer()
        for (index, name) in names.enumerated() { try server.put(name, randomBytes: 500 + index, seed: UInt64(index)) }
    }

    @Test func getSendsRawURLsEncoded() async throws {
        let out = try TempDir.make("raw-urls")
        let run = try await DLPipeRun.run(["get"] + names.map { server.url("/files/" + $0) } + ["-d", out, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        for (index, name) in names.enumerated() {
            #expect(sameBytes(out + "/" + name, TestData.random(500 + index, seed: UInt64(index))), "\(name)")
        }
        let urls = Set(run.events("finished").compactMap { $0["url"] as? String })
        #expect(urls == [
            server.url("/files/a%20b.txt"), server.url("/files/caf%C3%A9%20%F0%9F%98%80.txt"), server.url("/files/100%25.txt"),
        ])
    }

    @Test func addAndResolveAgree() async throws {
        let out = try TempDir.make("raw-urls-lua")
        let job = try LuaJob()
        let base = server.url("/files/")
        try job.write("j.lua", """
            local raw = { "a b.txt", "caf\u{E9} \u{1F600}.txt", "100%.txt" }
            local resolved = {}
            for _, name in ipairs(raw) do
              dl.add("\(base)" .. name)
              resolved["\(base)" .. name] = dl.url.resolve("\(base)", name)
            end
            dl.on("finished", function(d)
              local hits = 0
              for _, url in pairs(resolved) do if url == d.url then hits = hits + 1 end end
              if hits ~= 1 then error("not resolve's URL: " .. d.url) end
            end)
            """)
        let run = try await job.run("j.lua", out: out)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.events("finished").count == 3)
        #expect(run.events("queued").count == 3)
        for name in names { #expect(FileManager.default.fileExists(atPath: out + "/" + name), "\(name)") }
    }

    @Test func oneURLInTwoSpellingsIsOneDownload() async throws {
        let out = try TempDir.make("raw-urls-twice")
        let job = try LuaJob()
        try job.write("twice.lua", """
            local a = dl.add("\(server.url("/files/a b.txt"))")
            local b = dl.add("\(server.url("/files/a%20b.txt"))")
            if a ~= b then error("two ids: " .. a .. " " .. b) end
            """)
        let run = try await job.run("twice.lua", out: out)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.events("queued").count == 1)
        #expect(try server.requests(matching: "/files/a").count == 1)
    }

    /// Spellings RFC 3986 calls equivalent, and fragments, which never reach
    /// the server: one request, one file, across `get` and a re-run.
    @Test func equivalentSpellingsAreOneDownload() async throws {
        let out = try TempDir.make("equivalent-spellings")
        let plain = server.url("/files/a%20b.txt")
        let shouting = plain.replacingOccurrences(of: "http://127.0.0.1", with: "HTTP://127.0.0.1")
        let spellings = [plain, plain + "#top", server.url("/files/./x/../a%20b.txt"), shouting + "#end"]
        let first = try await DLPipeRun.run(["get"] + spellings + ["-d", out, "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.events("finished").map { $0["url"] as? String } == [plain])
        #expect(try server.requests(matching: "/files/a").count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).filter { !$0.hasPrefix(".") } == ["a b.txt"])
        // A re-run in another spelling asks conditionally for the file it placed.
        let second = try await DLPipeRun.run(["get", shouting + "#again", "-d", out, "--json"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).filter { !$0.hasPrefix(".") } == ["a b.txt"])
    }

    @Test func getDashOKnowsItsOwnFileByTheNormalisedURL() async throws {
        let out = try TempDir.make("raw-urls-o")
        let arguments = ["get", server.url("/files/a b.txt"), "-d", out, "-o", "mine.txt"]
        let first = try await DLPipeRun.run(arguments)
        #expect(first.status == 0, "\(first.stderr)")
        let second = try await DLPipeRun.run(arguments)
        #expect(second.status == 0, "the state placed mine.txt: not a refusal: \(second.stderr)")
    }
}
