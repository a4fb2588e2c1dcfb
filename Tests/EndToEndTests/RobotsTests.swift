import Foundation
import Testing

/// robots.txt (`--robots`, `dl.config{ robots = true }`): fetched once per
/// host before its first request, obeyed for dlpipe and `*`, its Crawl-delay
/// taken as the host's delay, and asked conditionally on a re-run.
@Suite struct RobotsTests {
    private func serverWithFiles() throws -> FaultServer {
        let server = try FaultServer()
        for name in ["a.bin", "b.bin", "private/p.bin", "private/open/o.bin"] {
            try server.put(name, randomBytes: 100, seed: UInt64(name.count))
        }
        return server
    }

    private func url(_ server: FaultServer, _ name: String) -> String { server.url("/files/" + name) }

    @Test func aDisallowedURLIsSkippedAndNeverRequested() async throws {
        let server = try serverWithFiles()
        try server.put("robots.txt", bytes: Array("""
            User-agent: *
            Disallow: /

            User-agent: dlpipe
            Disallow: /files/private/
            Allow: /files/private/open/
            """.utf8))
        let out = try TempDir.make("robots")
        let urls = ["a.bin", "private/p.bin", "private/open/o.bin"].map { url(server, $0) }
        let run = try await DLPipeRun.run(["get", "--robots", "--json", "-d", out] + urls)
        #expect(run.status == 0, "a skip is not a failure: \(run.stderr)")
        let skipped = run.events("skipped")
        #expect(skipped.count == 1, "\(run.stdout)")
        #expect(skipped.first?["reason"] as? String == "robots.txt")
        #expect((skipped.first?["url"] as? String)?.hasSuffix("/private/p.bin") == true)
        #expect(run.events("finished").count == 2)
        #expect(try server.requests(matching: "/files/private/p.bin").isEmpty, "never requested")
        #expect(try server.requests(matching: "/robots.txt").count == 1, "once per host per run")
        let robotsRequest = try server.requests(matching: "/robots.txt").first
        #expect((robotsRequest?["headers"] as? [String: String])?["user-agent"]?.hasPrefix("dlpipe/") == true)
        let lines = try await DLPipeRun.run(["get", "--robots", "-d", try TempDir.make("robots-lines")] + urls)
        #expect(lines.stderr.contains("1 skipped"), "the summary counts it: \(lines.stderr)")
        #expect(lines.stderr.contains("private/p.bin: robots.txt"), "\(lines.stderr)")
    }

    @Test func withoutTheOptionRobotsTxtIsNeitherAskedNorObeyed() async throws {
        let server = try serverWithFiles()
        try server.put("robots.txt", bytes: Array("User-agent: *\nDisallow: /\n".utf8))
        let run = try await DLPipeRun.run(["get", "--json", "-d", try TempDir.make("robots-off"), url(server, "a.bin")])
        #expect(run.status == 0 && run.events("finished").count == 1, "\(run.stderr)")
        #expect(try server.requests(matching: "/robots.txt").isEmpty)
    }

    @Test func aMissingRobotsTxtAllowsAllAndAnUnreachableOneDisallowsAll() async throws {
        let missing = try serverWithFiles()
        let allowed = try await DLPipeRun.run(["get", "--robots", "--json", "-d", try TempDir.make("robots-404"), url(missing, "private/p.bin")])
        #expect(allowed.status == 0 && allowed.events("finished").count == 1, "a 404 allows all: \(allowed.stdout)")
        let down = try serverWithFiles()
        try down.put("robots.status", bytes: Array("503\n".utf8))
        let refused = try await DLPipeRun.run(["get", "--robots", "--json", "-d", try TempDir.make("robots-503"), url(down, "a.bin")])
        #expect(refused.status == 0, "\(refused.stderr)")
        #expect(refused.events("skipped").first?["reason"] as? String == "robots.txt", "a 503 disallows all: \(refused.stdout)")
        #expect(try down.requests(matching: "/files/").isEmpty)
    }

    @Test func aHostWaitsForItsRobotsTxtWithoutItsSlotAndOtherHostsGoOn() async throws {
        let slow = try serverWithFiles()
        try slow.put("robots.delay", bytes: Array("2\n".utf8))
        let fast = try serverWithFiles()
        let out = try TempDir.make("robots-wait")
        // One transfer at a time: the slow host's download must not hold it while its file comes.
        let run = try await DLPipeRun.run(
            ["get", "--robots", "--json", "-j", "1", "-d", out, url(slow, "a.bin"), url(fast, "b.bin")])
        #expect(run.status == 0 && run.events("finished").count == 2, "held, not failed: \(run.stdout) \(run.stderr)")
        let asked = try #require(try slow.requests(matching: "/robots.txt").first?["time"] as? Double)
        let slowFile = try #require(try slow.requests(matching: "/files/").first?["time"] as? Double)
        let fastFile = try #require(try fast.requests(matching: "/files/").first?["time"] as? Double)
        #expect(slowFile >= asked + 1.9, "the host's download waited for its robots.txt")
        #expect(fastFile < asked + 1.5, "the other host went on meanwhile: \(fastFile - asked) s")
    }

    @Test func crawlDelayIsTheHostsDelayWhenLonger() async throws {
        let server = try serverWithFiles()
        try server.put("robots.txt", bytes: Array("User-agent: *\nCrawl-delay: 0.5\n".utf8))
        let job = try LuaJob()
        let run = try await job.run(source: """
            dl.config{ robots = true, host_delay = 0.1, per_host = 4 }
            dl.add("\(url(server, "a.bin"))")
            dl.add("\(url(server, "b.bin"))")
            dl.add("\(url(server, "private/open/o.bin"))")
            """, out: try TempDir.make("robots-delay"))
        #expect(run.status == 0 && run.events("finished").count == 3, "\(run.stderr)")
        let times = try server.requests(matching: "/").compactMap { $0["time"] as? Double }.sorted()
        // robots.txt and three downloads: each start half a second after the one before.
        #expect(times.count == 4, "\(times)")
        if let first = times.first, let last = times.last {
            #expect(last - first >= 3 * 0.5 - 0.1, "\(times)")
        }
        #expect(run.seconds >= 1.5, "\(run.seconds) s")
    }

    @Test func aReRunAsksForRobotsTxtConditionallyAndA304KeepsItsRules() async throws {
        let server = try serverWithFiles()
        try server.put("robots.txt", bytes: Array("User-agent: *\nDisallow: /files/private/\n".utf8))
        let out = try TempDir.make("robots-rerun")
        let urls = [url(server, "a.bin"), url(server, "private/p.bin")]
        let first = try await DLPipeRun.run(["get", "--robots", "--json", "-d", out] + urls)
        #expect(first.status == 0 && first.events("skipped").count == 1, "\(first.stdout)")
        let second = try await DLPipeRun.run(["get", "--robots", "--json", "-d", out] + urls)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.events("skipped").first?["reason"] as? String == "robots.txt", "the stored rules still apply: \(second.stdout)")
        let asked = try server.requests(matching: "/robots.txt")
        #expect(asked.count == 2, "once per run")
        let headers = asked.last?["headers"] as? [String: String] ?? [:]
        #expect(headers["if-none-match"] != nil && headers["if-modified-since"] != nil, "\(headers)")
        #expect(try server.requests(matching: "/files/private/").isEmpty)
    }
}

/// `--record` keeps the robots.txt answer and `--replay` answers with it: a
/// replayed run skips what the recorded one skipped, with the server gone.
@Suite struct RobotsReplayTests {
    @Test func aReplayedRunObeysTheRecordedRobotsTxt() async throws {
        let recording = try TempDir.make("robots-recording") + "/rec"
        let job = try LuaJob()
        var urls: [String] = []
        do {
            let server = try FaultServer()
            try server.put("robots.txt", bytes: Array("User-agent: *\nDisallow: /files/private/\n".utf8))
            try server.put("a.bin", randomBytes: 100)
            try server.put("private/p.bin", randomBytes: 100)
            urls = [server.url("/files/a.bin"), server.url("/files/private/p.bin")]
            try job.write("job.lua", "dl.config{ robots = true }\n" + urls.map { "dl.add('\($0)')\n" }.joined())
            let recorded = try await job.run("job.lua", out: try TempDir.make("robots-recorded"), ["--record", recording])
            #expect(recorded.status == 0 && recorded.events("skipped").count == 1, "\(recorded.stdout)")
        }
        // The server is gone: only the recording answers.
        let replayed = try await job.run("job.lua", out: try TempDir.make("robots-replayed"), ["--replay", recording])
        #expect(replayed.status == 0, "\(replayed.stderr)")
        #expect(replayed.events("finished").count == 1, "\(replayed.stdout)")
        #expect(replayed.events("skipped").first?["reason"] as? String == "robots.txt", "\(replayed.stdout)")
    }
}

/// examples/crawl: robots.txt, a depth limit and a host delay together,
/// against the example site.
@Suite struct PoliteCrawlExampleTests {
    @Test func theCrawlKeepsOutOfWhatRobotsTxtDisallowsAndStopsAtItsDepth() async throws {
        let site = Paths.repository + "/examples/site"
        let server = try FaultServer(root: site)
        let out = try TempDir.make("crawl")
        let run = try await DLPipeRun.run([
            "run", Paths.repository + "/examples/crawl/job.lua", "-d", out, "--json", "--no-hooks",
            "--var", "start=\(server.url("/files/index.html"))", "--var", "depth=1",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        for path in ["index.html", "gallery.html", "notes.txt"] {
            #expect(sameBytes(out + "/" + path, bytes(at: site + "/" + path)), "\(path)")
        }
        let skipped = run.events("skipped")
        #expect(skipped.compactMap { $0["reason"] as? String } == ["robots.txt"], "\(run.stdout)")
        #expect((skipped.first?["url"] as? String)?.hasSuffix("/files/docs/index.html") == true)
        #expect(try server.requests(matching: "/files/docs/").isEmpty, "disallowed: never requested")
        #expect(try server.requests(matching: "/files/img/").isEmpty, "the gallery's images are past depth 1")
        #expect(try server.requests(matching: "/robots.txt").count == 1)
        // robots.txt, then three pages: each start at least the Crawl-delay (0.3 s,
        // longer than the job's 0.2) after the one before.
        let times = try server.requests(matching: "/").compactMap { $0["time"] as? Double }.sorted()
        #expect(times.count == 4, "\(times)")
        for (earlier, later) in zip(times, times.dropFirst()) {
            #expect(later - earlier >= 0.3 - 0.05, "\(times)")
        }
    }
}

/// The `robots` key is part of the job API: `check` accepts it and `lua-defs` describes it.
@Suite struct RobotsKeyTests {
    @Test func checkAcceptsTheKeyAndLuaDefsDescribesIt() async throws {
        let job = try LuaJob()
        let path = try job.write("job.lua", "dl.config{ robots = true }\ndl.add(\"http://127.0.0.1:9/a\")\n")
        let check = try await DLPipeRun.run(["check", path])
        #expect(check.status == 0, "\(check.stderr)")
        let wrong = try job.write("wrong.lua", "dl.config{ robots = \"yes\" }\n")
        #expect(try await DLPipeRun.run(["check", wrong]).status == 2, "a non-boolean is a load error")
        let defs = try await DLPipeRun.run(["lua-defs"])
        #expect(defs.stdout.contains("---@field robots boolean?"), "\(defs.stdout.prefix(200))")
    }
}
