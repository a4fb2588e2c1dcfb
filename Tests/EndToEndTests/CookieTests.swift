import Foundation
import Testing

/// `-b/--cookie`, `-c/--cookie-jar` and `dl.config{ cookie, cookie_jar }`:
/// curl's cookie engine shared by every transfer, against the fault server's
/// /login (a 302 that sets the session cookie) and /members/ (403 without it).
@Suite struct CookieTests {
    let server: FaultServer
    let out: String
    let data: [UInt8]

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("cookies")
        data = try server.put("m.bin", randomBytes: 3000)
    }

    private func cookieHeaders() throws -> [String] {
        try server.requests(matching: "/members/").map { ($0["headers"] as? [String: String])?["cookie"] ?? "" }
    }

    @Test func aCookieSetOnALoginRedirectGoesWithTheNextHopAndIntoTheJar() async throws {
        let jar = try TempDir.make("jar") + "/cookies.txt"
        let login = server.url("/login?to=/members/m.bin")
        let without = try await DLPipeRun.run(["get", login, "-d", out, "-o", "none.bin", "--json"])
        #expect(without.status == 1, "no cookie engine, no session: \(without.stderr)")
        #expect(without.events("failed").first?["status"] as? Int == 403)
        let run = try await DLPipeRun.run(["get", login, "-d", out, "-o", "m.bin", "-c", jar])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/m.bin", data))
        #expect(try cookieHeaders() == ["", "session=s3cret"])
        let saved = try String(contentsOfFile: jar, encoding: .utf8)
        #expect(saved.hasPrefix("# Netscape HTTP Cookie File"))
        #expect(saved.contains("\tsession\ts3cret"), "\(saved)")
        let mode = try FileManager.default.attributesOfItem(atPath: jar)[.posixPermissions] as? Int
        #expect(mode == 0o600, "the jar holds credentials")
    }

    @Test func aCookieFileIsSentAndAMissingOneIsAnEmptyJar() async throws {
        let folder = try TempDir.make("jar")
        let file = folder + "/in.txt"
        try "# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\ts3cret\n"
            .write(toFile: file, atomically: true, encoding: .utf8)
        let run = try await DLPipeRun.run(["get", server.url("/members/m.bin"), "-d", out, "-b", file])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/m.bin", data))
        #expect(try cookieHeaders() == ["session=s3cret"])
        // As curl: `-b jar -c jar` works from the first run, when the jar is not there yet.
        let missing = folder + "/none.txt"
        let first = try await DLPipeRun.run(
            ["get", server.url("/login?to=/members/m.bin"), "-d", out, "-o", "again.bin", "-b", missing, "-c", missing])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try String(contentsOfFile: missing, encoding: .utf8).contains("\tsession\ts3cret"))
    }

    @Test func aCookieFileThatIsNotAFileIsAClearErrorBeforeAnyRequest() async throws {
        let folder = try TempDir.make("jar")
        let run = try await DLPipeRun.run(["get", server.url("/members/m.bin"), "-d", out, "-b", folder])
        #expect(run.status != 0)
        #expect(run.stderr.contains("cookie file") && run.stderr.contains(folder), "\(run.stderr)")
        #expect(try server.requests(matching: "/").isEmpty)
    }

    @Test func aCookieHeaderOfTheJobJoinsTheJarsInOneLine() async throws {
        let file = try TempDir.make("jar") + "/in.txt"
        try "# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\ts3cret\n"
            .write(toFile: file, atomically: true, encoding: .utf8)
        let job = try LuaJob()
        // One Cookie from dl.add's headers, one more from a request handler:
        // with the jar's, all go in one Cookie line (two lines are not HTTP).
        try job.write("job.lua", """
            dl.config{ cookie = "\(file)" }
            dl.add{ url = "\(server.url("/members/m.bin"))", headers = { Cookie = "from=add" } }
            dl.on("request", function(d, q) q.headers["Cookie"] = q.headers["Cookie"] .. "; hook=1" end)
            """)
        let run = try await job.run("job.lua", out: out)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/m.bin", data))
        // The fault server joins repeated header lines with ", ".
        #expect(try cookieHeaders() == ["session=s3cret; from=add; hook=1"])
    }

    @Test func aJobKeepsItsSessionWithDlConfig() async throws {
        let jar = try TempDir.make("jar") + "/job-cookies.txt"
        let job = try LuaJob()
        try job.write("job.lua", """
            dl.config{ cookie_jar = "\(jar)" }
            dl.add{ url = "\(server.url("/login?to=/members/m.bin"))", name = "first.bin" }
            dl.on("finished", function(d, f)
              if d.name == "first.bin" then dl.add{ url = "\(server.url("/members/m.bin"))", name = "second.bin" } end
            end)
            """)
        let run = try await job.run("job.lua", out: out)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/second.bin", data))
        #expect(try cookieHeaders() == ["session=s3cret", "session=s3cret"])
        #expect(try String(contentsOfFile: jar, encoding: .utf8).contains("\tsession\ts3cret"))
    }
}
