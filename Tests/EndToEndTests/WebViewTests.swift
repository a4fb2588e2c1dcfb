import Foundation
import Testing
import TestSupport

/// `--web ADDR:PORT` on a live run (docs/operating.md): the built dlpipe
/// downloads from the loopback FaultServer, two files quickly, one 404 and
/// two whose bodies stall after 1,000 bytes, so that the run lasts (two
/// transfers in flight) while the test reads /api/run and /metrics with
/// curl, checks /metrics with promtool, and loads the page in headless
/// Chromium, whose rendered DOM must show the counts, the failure's URL and
/// the rows in flight (screenshots at 1280 and 390 pixels wide are kept in .build/web-view-WIDTH.png).
@Suite struct WebViewTests {
    let server: FaultServer
    let urls: [String]
    let out: String

    init() throws {
        server = try FaultServer()
        try server.put("a.bin", randomBytes: 20_000, seed: 1)
        try server.put("b.bin", randomBytes: 20_000, seed: 2)
        try server.put("c.bin", randomBytes: 200_000, seed: 3)
        try server.put("d.bin", randomBytes: 200_000, seed: 4)
        urls = [
            server.url("/files/a.bin"), server.url("/files/b.bin"), server.url("/files/none.bin"),
            server.url("/files/c.bin?stall=1000"), server.url("/files/d.bin?stall=1000"),
        ]
        out = try TempDir.make("web")
    }

    /// Starts `get` with `--json` and `extra`, and reads its events until the
    /// two quick files finished, the 404 failed and both stalled bodies
    /// started: the run's state the test then looks at. Returns the run and
    /// the web event's URL.
    private func startRun(_ extra: [String]) async throws -> (Subprocess, String) {
        let run = try Subprocess(
            Paths.binary, ["get"] + urls + ["-d", out, "-j", "8", "--per-host", "8", "--retries", "0", "--json"] + extra, timeout: 60)
        let url = await offThePool { () -> String? in
            var url: String?
            var finished = 0, failed = 0, started = 0
            while let line = run.readStdoutLine() {
                if line.contains("\"event\":\"web\""), let found = line.firstMatch(of: /"url":"([^"]+)"/) { url = String(found.1) }
                if line.contains("\"event\":\"finished\"") { finished += 1 }
                if line.contains("\"event\":\"failed\"") { failed += 1 }
                if line.contains("\"event\":\"response\"") && line.contains("stall=1000") { started += 1 }
                if url != nil && finished == 2 && failed == 1 && started == 2 { return url }
            }
            return nil
        }
        return (run, try #require(url?.replacingOccurrences(of: "\\/", with: "/"), "the run's events: a web event, then the files"))
    }

    @Test func apiMetricsAndPageShowTheLiveRun() async throws {
        let (run, base) = try await startRun(["--web", "127.0.0.1:0"])
        // The view publishes twice a second: wait for the snapshot of that state.
        let api = try await offThePool {
            Result { try pollUntil(seconds: 10) { () -> WebReply? in
                let reply = try WebReply.fetch(base + "api/run")
                let counts = reply.json["counts"] as? [String: Int]
                return counts?["finished"] == 2 && counts?["failed"] == 1 && reply.json["in_flight"] as? Int == 2 ? reply : nil
            } }
        }.get().json
        #expect(api["title"] as? String == "dlpipe get" && api["state"] as? String == "running", "\(api)")
        #expect(api["queued"] as? Int == 0, "\(api)")
        let failures = api["failures"] as? [[String: Any]] ?? []
        #expect(failures.count == 1 && failures.first?["url"] as? String == urls[2] && failures.first?["status"] as? Int == 404, "\(failures)")
        let transfers = api["transfers"] as? [[String: Any]] ?? []
        #expect(Set(transfers.compactMap { $0["name"] as? String }) == ["c.bin", "d.bin"], "\(transfers)")
        #expect(transfers.allSatisfy { $0["bytes"] as? Int == 1000 && $0["total"] as? Int == 200_000 }, "\(transfers)")
        let hosts = api["hosts"] as? [[String: Any]] ?? []
        #expect(hosts.count == 1 && hosts.first?["in_flight"] as? Int == 2, "\(hosts)")
        #expect(api["received_bytes"] as? Int == 42_000, "two files of 20,000 and two bodies at 1,000: \(api)")

        let metrics = try await offThePool { Result { try WebReply.fetch(base + "metrics") } }.get()
        #expect(metrics.status == 200 && metrics.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
        for line in [
            "dlpipe_downloads_total{outcome=\"finished\"} 2", "dlpipe_downloads_total{outcome=\"failed\"} 1",
            "dlpipe_transfers_in_flight 2", "dlpipe_queued 0", "dlpipe_received_bytes_total 42000", "dlpipe_retries_total 0",
            "dlpipe_host_in_flight{host=\"127.0.0.1:\(server.port)\"} 2", "dlpipe_download_duration_seconds_count 2",
            "dlpipe_download_duration_seconds_bucket{le=\"+Inf\"} 2",
        ] {
            #expect(metrics.body.contains("\n" + line + "\n"), "\(line)\n\(metrics.body)")
        }
        let scraped = try TempDir.make("metrics") + "/metrics.txt"
        try metrics.body.write(toFile: scraped, atomically: true, encoding: .utf8)
        let check = try await offThePool { Result { try Subprocess("/usr/bin/promtool", ["check", "metrics"], stdin: scraped, timeout: 30).finish() } }.get()
        #expect(check.status == 0, "promtool check metrics: \(check.stdout)\(check.stderr)")

        let dom = try await offThePool { Result { try Self.chromium(["--dump-dom", base]) } }.get()
        #expect(dom.stdout.contains("id=\"count-finished\">2<") && dom.stdout.contains("id=\"count-failed\">1<"), "\(dom.stdout)")
        #expect(dom.stdout.contains("id=\"in-flight\">2<"), "\(dom.stdout)")
        // The header is a sentence; an outcome is coloured only when it happened; bytes take two slots.
        #expect(dom.stdout.contains(/id="state">running for [0-9]+s, pid [0-9]+</), "\(dom.stdout)")
        #expect(dom.stdout.contains("<div class=\"card finished\">finished<") && dom.stdout.contains("<div class=\"card failed\">failed<"), "\(dom.stdout)")
        #expect(dom.stdout.contains("<div class=\"card zero\">cancelled<") && dom.stdout.contains("<div class=\"card long\">bytes<"), "\(dom.stdout)")
        #expect(dom.stdout.contains("id=\"worker-note\" hidden=\"\""), "not a queue's worker: no note: \(dom.stdout)")
        #expect(dom.stdout.contains(">\(urls[2])<"), "the failure's URL: \(dom.stdout)")
        #expect(dom.stdout.components(separatedBy: "<tr class=\"transfer\">").count - 1 == 2, "two rows in flight: \(dom.stdout)")
        #expect(dom.stdout.contains(">c.bin<") && dom.stdout.contains(">d.bin<"), "\(dom.stdout)")
        #expect(dom.stdout.contains("<polyline"), "the throughput chart is drawn: \(dom.stdout)")
        // The chart's rate axis (0 to a round top, with units) and its time span.
        #expect(dom.stdout.contains(/class="y-max">[0-9.]+ (B|KiB|MiB|GiB)\/s</) && dom.stdout.contains("class=\"y-zero\">0 B/s<"), "\(dom.stdout)")
        #expect(dom.stdout.contains(/class="x-span">[0-9]+ s ago</) && dom.stdout.contains("class=\"x-now\">now<"), "\(dom.stdout)")
        // Each failure once: grouped under its error, said once, its URL once.
        #expect(dom.stdout.contains("<b class=\"failure-count\">1 failed</b>http 404<"), "\(dom.stdout)")
        #expect(dom.stdout.components(separatedBy: urls[2]).count == 2, "the failure's URL once: \(dom.stdout)")
        // In flight: the name in a cell of its own, the bar with its percentage.
        #expect(dom.stdout.contains("<td class=\"name\">c.bin</td>") && dom.stdout.components(separatedBy: "class=\"percent\">").count == 3, "\(dom.stdout)")
        // A laptop's width and a phone's (kept under .build/ to look at).
        for width in [1280, 390] {
            let shot = Paths.repository + "/.build/web-view-\(width).png"
            try? FileManager.default.removeItem(atPath: shot)
            let screenshot = try await offThePool { Result { try Self.chromium(["--window-size=\(width),1100", "--screenshot=" + shot, base]) } }.get()
            #expect(screenshot.status == 0 && FileManager.default.fileExists(atPath: shot), "\(screenshot.stderr)")
        }

        run.signal(SIGTERM)
        #expect(await offThePool { run.waitForExit(within: 20) } == 130)
    }

    /// Headless Chromium as root in a container, its time bounded: the page
    /// polls /api/run once a second, and 3 s of the page's time show it.
    private static func chromium(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let profile = try TempDir.make("chromium")
        return try Subprocess(
            "/usr/bin/chromium",
            ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir=" + profile,
             "--virtual-time-budget=3000"] + arguments,
            timeout: 60
        ).finish()
    }

    @Test func readOnlyAndOnlyLoopbackHostNames() async throws {
        let (run, base) = try await startRun(["--web", "127.0.0.1:0"])
        let (post, rebound, missing, head) = try await offThePool {
            Result {
                (try WebReply.fetch(base + "api/run", method: "POST"),
                 try WebReply.fetch(base + "api/run", headers: ["Host: attacker.example:80"]),
                 try WebReply.fetch(base + "nothing"), try WebReply.fetch(base + "metrics", method: "HEAD"))
            }
        }.get()
        #expect(post.status == 405 && post.headers["allow"] == "GET, HEAD", "\(post)")
        #expect(rebound.status == 403, "a page renamed to 127.0.0.1 by its DNS reads nothing: \(rebound)")
        #expect(missing.status == 404)
        #expect(head.status == 200 && head.body.isEmpty && head.headers["content-type"]?.hasPrefix("text/plain") == true, "\(head)")
        run.signal(SIGTERM)
        #expect(await offThePool { run.waitForExit(within: 20) } == 130)
    }

    /// Clients that connect and stall (more than the server serves at once)
    /// hold no transfer: a paced file arrives whole meanwhile, and the run
    /// ends when its downloads do (the stalled body fails after `--timeout`),
    /// not when the clients' 30 s idle timeout lets the server stop.
    @Test func stalledClientsHoldNoTransfer() async throws {
        let body = try server.put("slow.bin", randomBytes: 600_000, seed: 9)
        let run = try Subprocess(
            Paths.binary,
            ["get", server.url("/files/slow.bin?throttle=300000"), urls[3], "-d", out, "--json", "--retries", "0", "--timeout", "8",
             "--web", "127.0.0.1:0"],
            timeout: 60)
        let port = await offThePool { () -> Int? in
            while let line = run.readStdoutLine() {
                if let found = line.firstMatch(of: /"event":"web".*"port":(\d+)/) { return Int(found.1) }
            }
            return nil
        }
        let webPort = try #require(port)
        let stalled = (0..<80).compactMap { _ in StalledClient(port: webPort) }
        let connected = Date()
        #expect(stalled.count >= 64, "connected: \(stalled.count); errno \(StalledClient.lastError.withLock { $0 }) at port \(webPort)")
        let (status, stdout, stderr) = await offThePool { run.finish() }
        let seconds = Date().timeIntervalSince(connected)
        #expect(status == 1, "the stalled body failed, nothing else: \(stderr)")
        #expect(seconds < 20, "the run ended \(seconds) s after the clients stalled")
        #expect(stdout.contains("\"event\":\"finished\""), "\(stdout)")
        #expect(sameBytes(out + "/slow.bin", body))
        withExtendedLifetime(stalled) {}
    }

    /// `run`: the page is named for the job file, and a handler's added
    /// downloads count as the command line's do.
    @Test func aJobsViewIsNamedForItsFile() async throws {
        let job = try LuaJob()
        try job.write("mirror.lua", """
            dl.on("finished", function(d) if d.name == "a.bin" then dl.add("\(urls[3])") end end)
            dl.add("\(urls[0])")
            """)
        let run = try Subprocess(Paths.binary, ["run", job.directory + "/mirror.lua", "-d", out, "--json", "--web", "127.0.0.1:0"], timeout: 60)
        let base = await offThePool { () -> String? in
            var url: String?
            while let line = run.readStdoutLine() {
                if let found = line.firstMatch(of: /"event":"web","url":"([^"]+)"/) { url = String(found.1).replacingOccurrences(of: "\\/", with: "/") }
                if line.contains("\"event\":\"response\"") && line.contains("stall=1000") { return url }
            }
            return nil
        }
        let page = try #require(base)
        let api = try await offThePool {
            Result { try pollUntil(seconds: 10) { () -> WebReply? in
                let reply = try WebReply.fetch(page + "api/run")
                return reply.json["in_flight"] as? Int == 1 ? reply : nil
            } }
        }.get().json
        #expect(api["title"] as? String == "mirror.lua" && api["command"] as? String == "run", "\(api)")
        #expect((api["counts"] as? [String: Int])?["finished"] == 1 && api["files_total"] as? Int == 2, "\(api)")
        run.signal(SIGTERM)
        #expect(await offThePool { run.waitForExit(within: 20) } == 130)
    }

    @Test func aTokenGuardsEveryRequest() async throws {
        let token = "s3cret-TOKEN_0123456789"
        let (run, base) = try await startRun(["--web", "127.0.0.1:0", "--web-token", token, "-q"])
        let cmdline = (try? String(contentsOfFile: "/proc/\(run.pid)/cmdline", encoding: .utf8)) ?? ""
        #expect(!cmdline.isEmpty && !cmdline.contains(token), "the token is blanked from the arguments: \(cmdline)")
        let replies = try await offThePool {
            Result {
                [
                    try WebReply.fetch(base + "api/run"),
                    try WebReply.fetch(base + "metrics", headers: ["Authorization: Bearer wrong"]),
                    try WebReply.fetch(base + "metrics", headers: ["Authorization: Bearer " + token]),
                    try WebReply.fetch(base + "?token=" + token),
                    try WebReply.fetch(base + "api/run", headers: ["Cookie: dlpipe_token=" + token]),
                    try WebReply.fetch(base, headers: ["Cookie: dlpipe_token=" + token + "x"]),
                ]
            }
        }.get()
        #expect(replies[0].status == 401 && replies[0].headers["www-authenticate"]?.hasPrefix("Bearer") == true, "\(replies[0])")
        #expect(replies[1].status == 401)
        #expect(replies[2].status == 200 && replies[2].body.contains("dlpipe_downloads_total"), "\(replies[2])")
        let cookie = replies[3].headers["set-cookie"] ?? ""
        #expect(replies[3].status == 303 && replies[3].headers["location"] == "/", "\(replies[3])")
        #expect(cookie.hasPrefix("dlpipe_token=\(token);") && cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "\(cookie)")
        #expect(replies[4].status == 200 && replies[4].json["counts"] != nil, "\(replies[4])")
        #expect(replies[5].status == 401)
        run.signal(SIGTERM)
        let (_, _, stderr) = await offThePool { run.finish() }
        #expect(stderr.contains("dlpipe: web view at \(base) (with its token)"), "the URL on stderr under -q: \(stderr)")
        #expect(!stderr.contains(token))
    }

    @Test func anAddressBeyondLoopbackNeedsAToken() async throws {
        let bare = try await DLPipeRun.run(["get", urls[0], "-d", out, "--web", "0.0.0.0:0"])
        #expect(bare.status == 2, "\(bare.stderr)")
        #expect(bare.stderr.contains("DLPIPE_WEB_TOKEN") && bare.stderr.contains("--web-token-file"), "\(bare.stderr)")
        #expect(try server.requests(matching: "/files/a.bin").isEmpty, "nothing was downloaded")
        let stray = try await DLPipeRun.run(["get", urls[0], "-d", out, "--web-token", "abc"])
        #expect(stray.status == 2, "\(stray.stderr)")
        let file = try TempDir.make("token") + "/token"
        try "from-a-file\n".write(toFile: file, atomically: true, encoding: .utf8)
        let withFile = try await DLPipeRun.run(["get", urls[0], "-d", out, "--web", "0.0.0.0:0", "--web-token-file", file, "--json"])
        #expect(withFile.status == 0, "\(withFile.stderr)")
        #expect(withFile.events("web").first?["token"] as? Bool == true, "\(withFile.stdout)")
        let fromEnvironment = try await DLPipeRun.run(["get", urls[1], "-d", out, "--web", "0.0.0.0:0", "-q"], environment: ["DLPIPE_WEB_TOKEN": "env-token"])
        #expect(fromEnvironment.status == 0 && fromEnvironment.stderr.contains("(listening on every address, 0.0.0.0:"), "\(fromEnvironment.stderr)")
    }

    @Test func theExampleProgramLinksNoHTTPServer() throws {
        let example = (Paths.binary as NSString).deletingLastPathComponent + "/dlpipe-example"
        let (status, stdout, stderr) = try Subprocess("/usr/bin/ldd", [example]).finish()
        #expect(status == 0, "\(stderr)")
        #expect(stdout.contains("libcurl") && !stdout.contains("libmicrohttpd"), "\(stdout)")
        let (_, cli, _) = try Subprocess("/usr/bin/ldd", [Paths.binary]).finish()
        #expect(cli.contains("libmicrohttpd"), "\(cli)")
    }
}

/// docs/operating.md's Prometheus examples are what Prometheus accepts:
/// `promtool check config` on the scrape configuration and `promtool check
/// rules` on the alerting rules, as an operator would paste them.
@Suite struct OperatingDocTests {
    @Test func theScrapeConfigAndAlertingRulesPassPromtool() throws {
        let doc = try String(contentsOfFile: Paths.repository + "/docs/operating.md", encoding: .utf8)
        let blocks = doc.components(separatedBy: "```yaml\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
        try #require(blocks.count == 2, "a scrape configuration and the rules")
        let folder = try TempDir.make("promtool")
        let tokenFile = folder + "/token"
        try "t0ken\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let config = blocks[0].replacingOccurrences(of: "/etc/prometheus/dlpipe.token", with: tokenFile)
        try config.write(toFile: folder + "/prometheus.yml", atomically: true, encoding: .utf8)
        try blocks[1].write(toFile: folder + "/rules.yml", atomically: true, encoding: .utf8)
        let checkedConfig = try Subprocess("/usr/bin/promtool", ["check", "config", folder + "/prometheus.yml"], timeout: 30).finish()
        #expect(checkedConfig.status == 0, "\(checkedConfig.stdout)\(checkedConfig.stderr)")
        let checkedRules = try Subprocess("/usr/bin/promtool", ["check", "rules", folder + "/rules.yml"], timeout: 30).finish()
        #expect(checkedRules.status == 0 && checkedRules.stdout.contains("2 rules found"), "\(checkedRules.stdout)\(checkedRules.stderr)")
    }
}
