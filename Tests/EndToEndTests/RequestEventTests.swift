import Foundation
import Testing

/// The `request` event: a drop-in hook that adds credentials for one host, hop
/// by hop, checked at the servers (two fault servers: two hosts by port).
@Suite struct RequestEventTests {
    let out: String
    let job: LuaJob

    init() throws {
        out = try TempDir.make("request")
        job = try LuaJob()
    }

    private func header(_ request: [String: Any], _ name: String) -> String? {
        (request["headers"] as? [String: String])?[name]
    }

    @Test func hookAddsAuthorizationForOneHostOnlyAcrossARedirect() async throws {
        let home = try FaultServer()
        let other = try FaultServer()
        try home.put("a.bin", randomBytes: 1000)
        let data = try other.put("b.bin", randomBytes: 2000, seed: 2)
        let toOther = home.url("/redirect-to?url=" + other.url("/files/b.bin"))
        try job.write("job.lua", """
            dl.add("\(home.url("/files/a.bin"))")
            dl.add{ url = "\(toOther)", name = "b.bin" }
            """)
        try job.write("hooks.d/auth.lua", """
            local host = "127.0.0.1:\(home.port)"
            dl.on("request", function(d, q)
              local u = dl.url.parse(q.url)
              if u.host .. ":" .. u.port == host then q.headers["Authorization"] = "Bearer t0ken" end
              q.headers["X-Hop"] = q.url
              dl.log("request", q.attempt, q.url)
            end)
            """)
        let run = try await job.run("job.lua", out: out)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/b.bin", data))
        let atHome = try home.requests(matching: "/")
        #expect(atHome.count == 2)
        #expect(atHome.allSatisfy { header($0, "authorization") == "Bearer t0ken" }, "\(atHome)")
        let atOther = try other.requests(matching: "/files/b.bin")
        #expect(atOther.count == 1)
        #expect(atOther.allSatisfy { header($0, "authorization") == nil }, "the other host never gets it: \(atOther)")
        // The handler ran for the redirect's hop too, with that hop's URL.
        #expect(atOther.first.flatMap { header($0, "x-hop") } == other.url("/files/b.bin"))
        #expect(run.logLines(containing: "request\t1\t").count == 3, "\(run.stderr)")
    }

    /// A request handler is a handler as any other: it reads and lists files
    /// of the output directory, and controls downloads (a cancel from the
    /// handler of the download's own first hop: it is never requested).
    @Test func aRequestHandlerReadsListsAndCancels() async throws {
        let server = try FaultServer()
        try server.put("a.bin", randomBytes: 500)
        try server.put("skip.bin", randomBytes: 500, seed: 2)
        try "t0ken".write(toFile: out + "/token.txt", atomically: true, encoding: .utf8)
        try job.write("job.lua", """
            dl.add("\(server.url("/files/a.bin"))")
            dl.add("\(server.url("/files/skip.bin"))")
            dl.on("request", function(d, q)
              if q.url:find("skip", 1, true) then return dl.cancel(d.id) end
              q.headers["X-Token"] = dl.read("token.txt")
              q.headers["X-Listed"] = #dl.list("")
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let seen = try server.requests(matching: "/files/a.bin")
        #expect(seen.count == 1 && header(seen[0], "x-token") == "t0ken" && header(seen[0], "x-listed") == "1", "\(seen)")
        #expect(try server.requests(matching: "/files/skip.bin").isEmpty)
        #expect(run.events("cancelled").count == 1, "\(run.stdout)")
    }

    @Test func hookRemovesAJobHeaderAndSeesTheAttempt() async throws {
        let server = try FaultServer()
        try server.put("r.bin", randomBytes: 500)
        try job.write("job.lua", """
            dl.add{ url = "\(server.url("/files/r.bin?status=503&fail_times=1&retry_after=0"))", name = "r.bin",
              headers = { ["X-Drop"] = "yes", ["X-Keep"] = "kept" } }
            dl.on("request", function(d, q)
              q.headers["X-Drop"] = nil
              q.headers["X-Attempt"] = q.attempt
            end)
            -- A second handler sees the first one's changes, and adds its own.
            dl.on("request", function(d, q)
              q.headers["X-Second"] = q.headers["X-Attempt"] .. "+" .. tostring(q.headers["X-Drop"])
            end)
            """)
        let run = try await job.run("job.lua", out: out)
        #expect(run.status == 0, "\(run.stderr)")
        let seen = try server.requests(matching: "/files/r.bin")
        #expect(seen.count == 2, "\(seen)")
        #expect(seen.map { header($0, "x-attempt") } == ["1", "2"])
        #expect(seen.map { header($0, "x-second") } == ["1+nil", "2+nil"])
        #expect(seen.allSatisfy { header($0, "x-drop") == nil && header($0, "x-keep") == "kept" })
    }

    @Test func badHeaderFromTheHookFailsTheDownloadWithKindHook() async throws {
        let server = try FaultServer()
        try server.put("x.bin", randomBytes: 500)
        try job.write("job.lua", """
            dl.add("\(server.url("/files/x.bin"))")
            dl.on("request", function(d, q) q.headers["X-Bad"] = "a\\r\\nX-Injected: 1" end)
            """)
        let run = try await job.run("job.lua", out: out)
        #expect(run.status == 1)
        let failed = run.events("failed").first
        #expect(failed?["kind"] as? String == "hook")
        #expect((failed?["message"] as? String)?.contains("CR") == true, "\(String(describing: failed))")
        #expect(try server.requests(matching: "/files/x.bin").isEmpty, "nothing was sent")
    }
}
