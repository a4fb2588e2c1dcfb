@testable import DLPipeQueue
import Foundation
import Testing
import TestSupport

/// `dlpipe web`, the built binary: the live page, `/api/view` and
/// `/metrics` of a shared queue beside two live workers of a job (read from
/// the database), and of a directory's state after a run with a failure;
/// and `--web`'s token rule on `--listen`. Conditions are waited on as
/// documents the view serves (`pollUntil`); every process has a watchdog.
@Suite struct FleetWebTests: QueueRunSuite {
    let fixture: QueueRunFixture

    init() throws {
        fixture = try QueueRunFixture(label: "fleetweb", hosts: ["a.fleet.test", "b.fleet.test"])
    }

    /// Starts `dlpipe web ARGUMENTS --listen 127.0.0.1:0` and reads the
    /// page's URL from its stderr.
    static func startView(_ arguments: [String], environment: [String: String] = [:]) async throws -> (Subprocess, String) {
        let view = try Subprocess(Paths.binary, ["web"] + arguments, environment: environment, timeout: 90)
        let url = await offThePool { () -> String? in
            while let line = view.readStderrLine() {
                if let found = line.firstMatch(of: /web view of the .* at (http:\/\/[^ ]+\/)/) { return String(found.1) }
            }
            return nil
        }
        return (view, try #require(url, "the view's URL on stderr"))
    }

    @Test func theQueuesViewShowsTheJobItsWorkersAndFailures() async throws {
        // Two 404s, added first, fail at once; two bodies of 3 MB at 100
        // KiB/s keep the workers transferring while the view is read.
        let slow = try (0..<2).map { try fixture.slowFile("slow\($0).bin", size: 3_000_000, seed: UInt64($0 + 1), hostIndex: $0) }
        let missing = (0..<2).map { nginx.url(dir + "/missing\($0).bin", host: hosts[$0], tls: false) }
        let jobFile = try job.write("job.lua", (missing + slow.map(\.url)).map { "dl.add('\($0)')" }.joined(separator: "\n"))
        let name = "fleet"
        let workers = try (0..<2).map { _ in
            try Subprocess.queueWorker(
                ["run", jobFile, "-d", out, "--queue", queue, "--name", name, "--settle", "0", "--lease", "5", "-j", "2", "--retries", "0"]
                    + resolving)
        }
        let (view, base) = try await Self.startView(["--queue", queue, "--listen", "127.0.0.1:0"])
        let polled = await offThePool {
            Result { try pollUntil(seconds: 30) { () -> WebReply? in
                let reply = try WebReply.fetch(base + "api/view")
                let job = Self.firstJob(reply)
                let status = job?["status"] as? [String: Any]
                let failures = (job?["failures"] as? [String: Any])?["failures"] as? [[String: Any]]
                let transfers = job?["transfers"] as? [[String: Any]]
                // A speed needs two reads: the chart has a sample from the second on.
                let sampled = (job?["throughput"] as? [Any])?.isEmpty == false
                return (status?["workers"] as? [[String: Any]])?.count == 2 && failures?.count == 2 && transfers?.count == 2 && sampled ? reply : nil
            } }
        }
        guard case .success(let reply) = polled else {
            let last = try await offThePool { Result { try WebReply.fetch(base + "api/view") } }.get()
            Issue.record("the view never showed two workers, two failures and two transfers: \(last.body)")
            return
        }
        let api = try #require(Self.firstJob(reply))
        #expect(api["name"] as? String == name)
        let status = try #require(api["status"] as? [String: Any])
        let workerRows = try #require(status["workers"] as? [[String: Any]])
        #expect(workerRows.allSatisfy { $0["hostname"] as? String == ProcessInfo.processInfo.hostName && $0["state"] as? String == "alive" }, "\(workerRows)")
        #expect(Set(workerRows.compactMap { $0["pid"] as? Int }) == Set(workers.map { Int($0.pid) }), "\(workerRows)")
        let failures = try #require((api["failures"] as? [String: Any])?["failures"] as? [[String: Any]])
        #expect(Set(failures.compactMap { $0["url"] as? String }) == Set(missing) && failures.allSatisfy { $0["kind"] as? String == "http" })
        #expect((api["earlier_failures"] as? [Any])?.isEmpty == true, "one run so far: \(api)")
        let transfers = try #require(api["transfers"] as? [[String: Any]])
        #expect(Set(transfers.compactMap { $0["url"] as? String }) == Set(slow.map(\.url)), "\(transfers)")
        #expect(status["transferring"] as? Int == 2 && status["failed"] as? Int == 2, "\(status)")

        let metrics = try await offThePool { Result { try WebReply.fetch(base + "metrics") } }.get()
        for line in [
            "dlpipe_queue_up 1", "dlpipe_queue_downloads{queue_job=\"fleet\",status=\"failed\"} 2",
            "dlpipe_transfers_in_flight{queue_job=\"fleet\"} 2", "dlpipe_workers{queue_job=\"fleet\",state=\"alive\"} 2",
            "dlpipe_downloads_total{queue_job=\"fleet\",outcome=\"failed\"} 2", "dlpipe_job_paused{queue_job=\"fleet\"} 0",
        ] {
            #expect(metrics.body.contains(line + "\n"), "\(line)\n\(metrics.body)")
        }
        #expect(metrics.body.contains("dlpipe_host_in_flight{queue_job=\"fleet\",host=\"\(hosts[0]):\(nginx.plainPort)\"} 1"), "\(metrics.body)")
        try await Self.promtool(metrics.body)

        let dom = try await offThePool { Result { try Self.chromium(["--dump-dom", base]) } }.get().stdout
        #expect(dom.contains("class=\"job-name\">fleet<"), "the job's name: \(dom)")
        #expect(dom.components(separatedBy: "<tr class=\"worker\">").count - 1 == 2, "a row per worker: \(dom)")
        #expect(dom.contains(">\(missing[0])<") && dom.contains(">\(missing[1])<"), "the failures' URLs: \(dom)")
        #expect(dom.contains("<option value=\"1\">1</option>") && dom.contains("<option value=\"http\">http</option>"), "the run and kind filters: \(dom)")
        #expect(dom.contains(slow[0].url) && dom.contains("<polyline"), "what a worker fetches, the chart: \(dom)")
        // The shared script's chart axis and failure groups: the two 404s under their error, once.
        #expect(dom.contains("class=\"y-zero\">0 B/s<") && dom.contains("<b class=\"failure-count\">2 failed</b>http: HTTP 404<"), "\(dom)")
        let shot = Paths.repository + "/.build/web-fleet.png"
        try? FileManager.default.removeItem(atPath: shot)
        let screenshot = try await offThePool { Result { try Self.chromium(["--window-size=412,1400", "--screenshot=" + shot, base]) } }.get()
        #expect(screenshot.status == 0 && FileManager.default.fileExists(atPath: shot), "\(screenshot.stderr)")

        view.signal(SIGTERM)
        #expect(await offThePool { view.waitForExit(within: 20) } == 130)
        for worker in workers { worker.signal(SIGTERM) }
        _ = await offThePool { workers.map { $0.finish() } }
    }

    @Test func aDirectorysViewShowsItsRunsAndFailures() async throws {
        let server = try FaultServer()
        try server.put("a.bin", randomBytes: 5_000, seed: 1)
        let missing = server.url("/files/none.bin")
        let run = try await DLPipeRun.run(["get", server.url("/files/a.bin"), missing, "-d", out, "--retries", "0"])
        #expect(run.status == 1, "\(run.stderr)")
        let (view, base) = try await Self.startView([out])
        let (api, metrics) = try await offThePool {
            Result { (try WebReply.fetch(base + "api/view"), try WebReply.fetch(base + "metrics")) }
        }.get()
        #expect(api.json["kind"] as? String == "directory" && api.json["state"] as? String == "ok", "\(api.body)")
        let counts = api.json["counts"] as? [String: Int]
        #expect(counts?["finished"] == 1 && counts?["failed"] == 1, "\(api.body)")
        let status = try #require(api.json["status"] as? [String: Any])
        let runs = try #require(status["runs"] as? [[String: Any]])
        #expect(runs.count == 1 && runs.first?["status"] as? String == "ended" && runs.first?["failed"] as? Int == 1, "\(runs)")
        let downloads = try #require(status["downloads"] as? [[String: Any]])
        #expect(downloads.contains { $0["url"] as? String == missing && $0["status"] as? String == "failed" }, "\(downloads)")
        for line in ["dlpipe_state_downloads{status=\"failed\"} 1", "dlpipe_downloads_total{outcome=\"finished\"} 1", "dlpipe_run_active 0"] {
            #expect(metrics.body.contains(line + "\n"), "\(line)\n\(metrics.body)")
        }
        try await Self.promtool(metrics.body)
        // Run times as `dlpipe status` prints them, with the zone; a 0 is not coloured.
        let dom = try await offThePool { Result { try Self.chromium(["--dump-dom", base]) } }.get().stdout
        #expect(dom.contains(/<td>[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} (UTC|[+-][0-9]{2}:[0-9]{2})<\/td>/), "\(dom)")
        #expect(dom.contains("<div class=\"card finished\">finished<") && dom.contains("<div class=\"card failed\">failed<"), "\(dom)")
        view.signal(SIGINT)
        #expect(await offThePool { view.waitForExit(within: 20) } == 130)
    }

    @Test func anAddressBeyondLoopbackNeedsAToken() async throws {
        let bare = try await DLPipeRun.run(["web", out, "--listen", "0.0.0.0:0"])
        #expect(bare.status == 2 && bare.stderr.contains("DLPIPE_WEB_TOKEN"), "\(bare.stderr)")
        let queueBare = try await DLPipeRun.run(["web", "--queue", queue, "--listen", "0.0.0.0:0"])
        #expect(queueBare.status == 2, "\(queueBare.stderr)")
        let (view, base) = try await Self.startView([out, "--listen", "0.0.0.0:0"], environment: ["DLPIPE_WEB_TOKEN": "fleet-token"])
        let local = base.replacingOccurrences(of: "0.0.0.0", with: "127.0.0.1")
        let (without, with) = try await offThePool {
            Result { (try WebReply.fetch(local + "api/view"), try WebReply.fetch(local + "api/view", headers: ["Authorization: Bearer fleet-token"])) }
        }.get()
        #expect(without.status == 401 && with.status == 200 && with.json["kind"] as? String == "directory", "\(without) \(with)")
        view.signal(SIGTERM)
        #expect(await offThePool { view.waitForExit(within: 20) } == 130)
    }

    /// A database that no worker used yet: the view says so, and creates nothing there.
    @Test func aDatabaseWithoutAQueueStaysWithout() async throws {
        let (view, base) = try await Self.startView(["--queue", queue, "--name", "later"])
        let api = try await offThePool {
            Result { try pollUntil(seconds: 10) { () -> WebReply? in
                let reply = try WebReply.fetch(base + "api/queue")
                return reply.json["state"] as? String == "no queue" ? reply : nil
            } }
        }.get()
        #expect((api.json["jobs"] as? [Any])?.isEmpty == true, "\(api.body)")
        view.signal(SIGTERM)
        #expect(await offThePool { view.waitForExit(within: 20) } == 130)
        let schema = try PostgresConnection(PostgresAddress(queue)).execute(
            "SELECT count(*) AS n FROM pg_namespace WHERE nspname = 'dlpipe'").rows[0].int("n")
        #expect(schema == 0, "the view migrated nothing")
    }

    static func firstJob(_ reply: WebReply) -> [String: Any]? {
        (reply.json["jobs"] as? [[String: Any]])?.first
    }

    static func promtool(_ text: String) async throws {
        let scraped = try TempDir.make("fleet-metrics") + "/metrics.txt"
        try text.write(toFile: scraped, atomically: true, encoding: .utf8)
        let check = try await offThePool { Result { try Subprocess("/usr/bin/promtool", ["check", "metrics"], stdin: scraped, timeout: 30).finish() } }.get()
        #expect(check.status == 0, "promtool check metrics: \(check.stdout)\(check.stderr)\n\(text)")
    }

    /// Headless Chromium as root in a container, its time bounded: 3 s of
    /// the page's time (it polls every 2 s).
    static func chromium(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let profile = try TempDir.make("chromium")
        return try Subprocess(
            "/usr/bin/chromium",
            ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir=" + profile,
             "--virtual-time-budget=3000"] + arguments,
            timeout: 60
        ).finish()
    }
}
