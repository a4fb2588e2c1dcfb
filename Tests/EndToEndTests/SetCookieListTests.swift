import Foundation
import Testing

/// `r.headers["set-cookie"]` is a list, one entry per Set-Cookie line (a comma
/// cannot separate them: Expires dates hold commas); other repeated headers
/// stay joined with ", ".
@Suite struct SetCookieListTests {
    @Test func setCookieIsAListAndOtherRepeatedHeadersAreJoined() async throws {
        let server = try FaultServer()
        let out = try TempDir.make("set-cookie")
        let job = try LuaJob()
        try job.write("job.lua", """
            dl.add{ url = "\(server.url("/set-cookies"))", name = "c.txt" }
            dl.on("response", function(d, r)
              local cookies = r.headers["set-cookie"]
              dl.log("type", type(cookies), #cookies)
              for i, c in ipairs(cookies) do dl.log("cookie", i, c) end
              dl.log("multi", r.headers["x-multi"])
            end)
            """)
        let run = try await job.run("job.lua", out: out)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.logLines(containing: "type\ttable\t2").count == 1, "\(run.stderr)")
        #expect(run.logLines(containing: "cookie\t1\ta=1; Path=/; Expires=Wed, 21 Oct 2037 07:28:00 GMT").count == 1, "\(run.stderr)")
        #expect(run.logLines(containing: "cookie\t2\tb=2; Path=/").count == 1, "\(run.stderr)")
        #expect(run.logLines(containing: "multi\tx, y").count == 1, "\(run.stderr)")
    }
}
