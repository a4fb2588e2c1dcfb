import Foundation
import Testing
import TestSupport

/// robots.txt on every hop of a redirect (`--robots`): a hop to another
/// origin is asked against that origin's file (fetched once per run, its
/// Crawl-delay taken for that host), a hop within the origin against the
/// same rules; a disallowed hop ends the download skipped, never requested.
@Suite struct RobotsRedirectTests {
    private func server(robots: String?) throws -> FaultServer {
        let server = try FaultServer()
        for name in ["a.bin", "b.bin", "private/p.bin"] {
            try server.put(name, randomBytes: 100, seed: UInt64(name.count))
        }
        if let robots { try server.put("robots.txt", bytes: Array(robots.utf8)) }
        return server
    }

    private func redirect(_ from: FaultServer, to url: String) -> String {
        from.url("/redirect-to?url=" + url)
    }

    @Test func aHopToAnotherOriginIsAskedAgainstThatOriginsRobotsTxt() async throws {
        // The first origin has no robots.txt (a 404: everything allowed).
        let first = try server(robots: nil)
        let other = try server(robots: "User-agent: *\nDisallow: /files/private/\n")
        let urls = [
            redirect(first, to: other.url("/files/private/p.bin")),
            redirect(first, to: other.url("/files/a.bin")),
        ]
        let run = try await DLPipeRun.run(["get", "--robots", "--json", "-d", try TempDir.make("robots-hop")] + urls)
        #expect(run.status == 0, "a skip is not a failure: \(run.stderr)")
        let skipped = run.events("skipped")
        #expect(skipped.compactMap { $0["reason"] as? String } == ["robots.txt"], "\(run.stdout)")
        #expect((skipped.first?["url"] as? String)?.contains("private") == true, "\(skipped)")
        #expect(run.events("finished").count == 1, "\(run.stdout)")
        #expect(try other.requests(matching: "/files/private/").isEmpty, "the disallowed hop is never requested")
        #expect(try other.requests(matching: "/files/a.bin").count == 1)
        #expect(try other.requests(matching: "/robots.txt").count == 1, "once per origin per run")
        #expect(try first.requests(matching: "/robots.txt").count == 1)
        #expect(try first.requests(matching: "/redirect-to").count == 2)
    }

    @Test func aHopWithinTheOriginIsAskedAgainstTheSameRules() async throws {
        let server = try server(robots: "User-agent: *\nDisallow: /files/private/\n")
        // Two hops inside /redirect/ (allowed), then /files/private/p.bin (not).
        let run = try await DLPipeRun.run(
            ["get", "--robots", "--json", "-d", try TempDir.make("robots-same"), server.url("/redirect/1/files/private/p.bin")])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.events("skipped").first?["reason"] as? String == "robots.txt", "\(run.stdout)")
        #expect(try server.requests(matching: "/redirect/").count == 2, "the allowed hops were asked")
        #expect(try server.requests(matching: "/files/").isEmpty, "the disallowed hop was not")
        #expect(try server.requests(matching: "/robots.txt").count == 1)
        let lines = try await DLPipeRun.run(
            ["get", "--robots", "-d", try TempDir.make("robots-same-lines"), server.url("/redirect/0/files/private/p.bin")])
        #expect(lines.status == 0 && lines.stderr.contains("1 skipped"), "\(lines.stderr)")
    }

    @Test func theOtherOriginsCrawlDelayPacesItsHopsAndNoRequestHandlerSeesARefusedHop() async throws {
        let first = try server(robots: nil)
        let other = try server(robots: "User-agent: *\nCrawl-delay: 0.5\nDisallow: /files/private/\n")
        let job = try LuaJob()
        let run = try await job.run(source: """
            dl.config{ robots = true, per_host = 4 }
            dl.add("\(redirect(first, to: other.url("/files/a.bin")))")
            dl.add("\(redirect(first, to: other.url("/files/b.bin")))")
            dl.add("\(redirect(first, to: other.url("/files/private/p.bin")))")
            dl.on("request", function(d, q)
              if q.url:find("private", 1, true) and not q.url:find("redirect", 1, true) then
                dl.warn("asked about " .. q.url)
              end
            end)
            """, out: try TempDir.make("robots-hop-delay"))
        #expect(run.status == 0 && run.events("finished").count == 2, "\(run.stdout) \(run.stderr)")
        #expect(run.events("skipped").count == 1, "\(run.stdout)")
        #expect(!run.stderr.contains("asked about"), "a refused hop raises no request event: \(run.stderr)")
        let asked = try #require(try other.requests(matching: "/robots.txt").first?["time"] as? Double)
        let files = try other.requests(matching: "/files/").compactMap { $0["time"] as? Double }.sorted()
        #expect(files.count == 2, "\(files)")
        // robots.txt was the host's first request: its turns are half a second
        // apart from it (a turn taken late does not push the next one back).
        if files.count == 2 {
            #expect(files[0] - asked >= 0.5 - 0.1, "\(files[0] - asked) s")
            #expect(files[1] - asked >= 2 * 0.5 - 0.1, "\(files[1] - asked) s")
        }
    }
}

/// A redirect hop in a shared queue: the hop's origin's robots.txt is
/// fetched through the queue's claim as a first request's is.
@Suite struct RobotsRedirectQueueTests {
    @Test func aWorkerAsksTheHopsOriginAndSkipsWhatItDisallows() async throws {
        let first = try FaultServer()
        let other = try FaultServer()
        try other.put("robots.txt", bytes: Array("User-agent: *\nDisallow: /files/private/\n".utf8))
        try other.put("a.bin", randomBytes: 100)
        try other.put("private/p.bin", randomBytes: 100)
        let urls = ["/files/a.bin", "/files/private/p.bin"].map { first.url("/redirect-to?url=" + other.url($0)) }
        let queue = try PostgresCluster.shared().freshDatabase("robots-hop")
        let job = try LuaJob()
        let jobFile = try job.write("job.lua", "dl.config{ robots = true }\n" + urls.map { "dl.add('\($0)')\n" }.joined())
        let worker = try Subprocess.queueWorker(
            ["run", jobFile, "-d", try TempDir.make("robots-hop-queue"), "--queue", queue, "--name", "robots-hop",
             "--settle", "0", "--json"])
        let output = await offThePool { worker.finish() }
        #expect(output.status == 0, "\(output.stderr)")
        let events = output.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let skipped = events.filter { $0["event"] as? String == "skipped" }
        #expect(skipped.compactMap { $0["reason"] as? String } == ["robots.txt"], "\(output.stdout)")
        #expect(events.filter { $0["event"] as? String == "finished" }.count == 1, "\(output.stdout)")
        #expect(try other.requests(matching: "/files/private/").isEmpty)
        #expect(try other.requests(matching: "/robots.txt").count == 1)
    }
}
