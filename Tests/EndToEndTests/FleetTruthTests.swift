@testable import DLPipeQueue
import Foundation
import Testing
import TestSupport

/// What the fleet's views and the control plane say, checked as a new
/// operator would read it: JSON a strict reader takes (no key twice), run
/// counts that agree with `status`, a page that keeps its jobs through a
/// database outage, a directory that points to its queue, and messages that
/// say what happened. Real PostgreSQL, real workers, the page rendered by
/// headless Chromium; conditions are waited on (`pollUntil`, lines of
/// output), every process has a watchdog.
@Suite struct FleetTruthTests: QueueRunSuite {
    let fixture: QueueRunFixture

    init() throws {
        fixture = try QueueRunFixture(label: "fleettruth", hosts: ["a.truth.test", "b.truth.test"])
    }

    func worker(_ jobFile: String, name: String, queue: String? = nil, _ extra: [String] = []) throws -> Subprocess {
        try Subprocess.queueWorker(
            ["run", jobFile, "-d", out, "--queue", queue ?? self.queue, "--name", name, "--settle", "0", "--lease", "3"] + extra + resolving)
    }

    /// `dlpipe ARGUMENTS`, to its end.
    func dlpipe(_ arguments: [String]) async -> (status: Int32, stdout: String, stderr: String) {
        await offThePool {
            guard let process = try? Subprocess(Paths.binary, arguments, environment: ["NO_COLOR": "1"], timeout: 60) else {
                return (-1, "", "cannot start dlpipe")
            }
            return process.finish()
        }
    }

    func control(_ arguments: [String], name: String) async -> (status: Int32, stdout: String, stderr: String) {
        await dlpipe(["queue"] + arguments + ["--queue", queue, "--name", name])
    }

    func json(_ text: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(text.utf8))
    }

    func dom(_ url: String) async throws -> String {
        try await offThePool { Result { try FleetWebTests.chromium(["--dump-dom", url]) } }.get().stdout
    }

    /// The keys that an object of the JSON `text` holds more than once
    /// (JSONSerialization keeps the last of them and says nothing).
    static func duplicateKeys(_ text: String) -> [String] {
        let scalars = Array(text.unicodeScalars)
        var objects: [Set<String>] = []
        var duplicates: [String] = []
        var lastString: String?
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "\"" {
                var string = ""
                index += 1
                while index < scalars.count, scalars[index] != "\"" {
                    if scalars[index] == "\\" {
                        string.unicodeScalars.append(scalars[index])
                        index += 1
                    }
                    if index < scalars.count { string.unicodeScalars.append(scalars[index]) }
                    index += 1
                }
                lastString = string
            } else if scalar == ":" {
                if let key = lastString, !objects.isEmpty, !objects[objects.count - 1].insert(key).inserted { duplicates.append(key) }
                lastString = nil
            } else if scalar == "{" {
                objects.append([])
            } else if scalar == "}" {
                _ = objects.popLast()
            } else if !scalar.properties.isWhitespace {
                lastString = nil
            }
            index += 1
        }
        return duplicates
    }

    @Test func theDuplicateKeyCheckFindsOne() {
        #expect(Self.duplicateKeys(#"{"a":1,"b":{"a":2},"c":[{"x":"a:"}],"a":3}"#) == ["a"])
        #expect(Self.duplicateKeys(#"{"a":"\"a\":","b":[1,{"b":2}]}"#).isEmpty)
    }

    @Test func aPausedJobsKeysAreEachOnceItsRunListsEveryWorkerAndCountsWhatAStopCancelled() async throws {
        // 600 KB at 100 KiB/s, 6 s each: the workers still transfer while
        // the job is read, paused and stopped.
        var urls: [String] = []
        for index in 0..<8 {
            urls.append(try fixture.slowFile("t\(index).bin", size: 600_000, seed: UInt64(200 + index), hostIndex: index).url)
        }
        let jobFile = try job.write("job.lua", urls.map { "dl.add('\($0)')" }.joined(separator: "\n"))
        let name = "big"
        let workers = try (0..<2).map { _ in try worker(jobFile, name: name, ["-j", "1", "--json"]) }
        _ = await offThePool { workers[0].waitForLine(containing: "\"event\":\"progress\"") }
        // Both joined the run (the second may hold nothing yet, or only claims ahead).
        _ = try pollUntil(seconds: 60) { () -> Bool? in
            try PostgresConnection(PostgresAddress(queue)).execute(
                """
                SELECT count(*) AS n FROM dlpipe.workers w JOIN dlpipe.jobs j ON j.id = w.job_id
                WHERE j.name = $1 AND w.run_id IS NOT NULL AND w.stopped_at IS NULL
                """, [.text(name)]).rows[0].int("n") == 2 ? true : nil
        }
        // Every worker of the running run, those that reported nothing yet too.
        let running = try #require(try json(await control(["runs", "--json"], name: name).stdout) as? [[String: Any]])
        let shares = try #require(running.first?["workers"] as? [[String: Any]])
        #expect(running.first?["status"] as? String == "running" && shares.count == 2, "\(running)")
        #expect(Set(shares.compactMap { $0["pid"] as? Int }) == Set(workers.map { Int($0.pid) }), "\(shares)")

        #expect(await control(["pause"], name: name).status == 0)
        let one = await dlpipe(["status", "--queue", queue, "--name", name, "--json"])
        let list = await dlpipe(["status", "--queue", queue, "--json"])
        for reply in [one, list] {
            #expect(reply.status == 0 && Self.duplicateKeys(reply.stdout).isEmpty, "\(Self.duplicateKeys(reply.stdout)): \(reply.stdout)")
        }
        let status = try #require(try json(one.stdout) as? [String: Any])
        #expect(status["job_paused"] as? Bool == true && status["job_paused_ago"] is Double && status["paused"] as? Int != nil, "\(one.stdout)")
        let listed = try #require(((try json(list.stdout) as? [String: Any])?["jobs"] as? [[String: Any]])?.first)
        #expect(listed["job_paused"] as? Bool == true && listed["paused"] as? Int != nil, "\(list.stdout)")

        let (view, base) = try await FleetWebTests.startView(["--queue", queue, "--name", name])
        let api = try await offThePool {
            Result { try pollUntil(seconds: 30) { () -> WebReply? in
                let reply = try WebReply.fetch(base + "api/view")
                return ((FleetWebTests.firstJob(reply)?["status"] as? [String: Any])?["job_paused"] as? Bool) == true ? reply : nil
            } }
        }.get()
        #expect(Self.duplicateKeys(api.body).isEmpty, "\(Self.duplicateKeys(api.body))")
        // The metrics tell running by its parts only: the statuses add up to the job's downloads.
        let metrics = try await offThePool { Result { try WebReply.fetch(base + "metrics") } }.get().body
        let series = metrics.split(separator: "\n").filter { $0.hasPrefix("dlpipe_queue_downloads{") }
        #expect(!series.contains { $0.contains("status=\"running\"") }, "\(metrics)")
        #expect(series.compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +) == 8, "\(metrics)")
        try await FleetWebTests.promtool(metrics)
        let paused = try await dom(base)
        #expect(paused.contains("class=\"tag\">paused<") && paused.contains("run #1 running"), "\(paused)")
        #expect(paused.firstMatch(of: /class="card">paused<b>\d+<\/b>/) != nil, "the paused card is a count: \(paused)")
        #expect(await control(["resume"], name: name).status == 0)

        let stop = await control(["stop"], name: name)
        #expect(stop.status == 0, "\(stop)")
        let ended = await offThePool { workers.map { $0.finish() } }
        #expect(ended.map(\.status) == [130, 130], "\(ended.map(\.stderr))")
        for result in ended {
            #expect(result.stderr.contains("dlpipe: stopping as `dlpipe queue stop` asked (") && !result.stderr.contains("press Ctrl-C again"),
                    "\(result.stderr)")
        }
        // The run ended as an interrupted one; what it ended cancelled counts in it.
        let cancelled = Int(try statuses(name)["cancelled"] ?? 0)
        let history = try #require(try json(await control(["runs", "--json"], name: name).stdout) as? [[String: Any]])
        #expect(history.first?["exit_code"] as? Int == 130 && cancelled > 0, "\(history)")
        #expect(history.first?["cancelled"] as? Int == cancelled, "status says \(cancelled) cancelled: \(history)")
        #expect(await control(["runs"], name: name).stdout.contains(", \(cancelled) cancelled,"))

        _ = try await offThePool {
            Result { try pollUntil(seconds: 30) { () -> Bool? in
                let runs = FleetWebTests.firstJob(try WebReply.fetch(base + "api/view"))?["runs"] as? [[String: Any]]
                return runs?.first?["status"] as? String == "ended" ? true : nil
            } }
        }.get()
        let after = try await dom(base)
        #expect(after.contains("run #1 ended, exit 130") && after.contains("<td class=\"cancelled\">\(cancelled)</td>"), "\(after)")
        #expect(after.contains("class=\"url lines by-worker\""), "\(after)")
        let shot = Paths.repository + "/.build/web-fleet-stopped.png"
        try? FileManager.default.removeItem(atPath: shot)
        _ = try await offThePool { Result { try FleetWebTests.chromium(["--window-size=412,1600", "--screenshot=" + shot, base]) } }.get()
        view.signal(SIGTERM)
        #expect(await offThePool { view.waitForExit(within: 20) } == 130)
    }

    @Test func theFleetViewKeepsItsJobsThroughAnOutageAndTheDirectoryPointsToTheQueue() async throws {
        let cluster = try PostgresCluster.ownCluster()
        var stopped = false
        defer { if !stopped { cluster.stop() } }
        let ownQueue = try cluster.freshDatabase("fleetoutage")
        let path = dir + "/small.bin"
        _ = try nginx.put(path, randomBytes: 2_000, seed: 300)
        let jobFile = try job.write("job.lua", "dl.add('\(nginx.url(path, host: hosts[0], tls: false))')")
        let ran = await offThePool { try? worker(jobFile, name: "mirror", queue: ownQueue).finish() }
        #expect(ran?.status == 0, "\(ran?.stderr ?? "")")

        // A job asked for that the queue does not have: the page names those it has.
        let (other, otherBase) = try await FleetWebTests.startView(["--queue", ownQueue, "--name", "nosuch"])
        let missing = try await dom(otherBase)
        #expect(missing.contains("no job named nosuch in this queue (yet); its jobs: mirror"), "\(missing)")
        other.signal(SIGTERM)
        _ = await offThePool { other.waitForExit(within: 20) }

        let (view, base) = try await FleetWebTests.startView(["--queue", ownQueue])
        _ = try await offThePool {
            Result { try pollUntil(seconds: 30) { () -> Bool? in
                (FleetWebTests.firstJob(try WebReply.fetch(base + "api/view"))?["runs"] as? [Any])?.count == 1 ? true : nil
            } }
        }.get()
        cluster.stop()
        stopped = true
        let stale = try await offThePool {
            Result { try pollUntil(seconds: 30) { () -> WebReply? in
                let reply = try WebReply.fetch(base + "api/view")
                return reply.json["error"] != nil ? reply : nil
            } }
        }.get()
        // The document keeps its shape: the last jobs read, marked stale, since when.
        #expect(stale.json["state"] as? String == "ok" && stale.json["stale"] as? Bool == true, "\(stale.body)")
        #expect(stale.json["generated_at"] is String && stale.json["error_since"] is String && stale.json["read_at"] is String, "\(stale.body)")
        #expect(FleetWebTests.firstJob(stale)?["name"] as? String == "mirror", "\(stale.body)")
        let page = try await dom(base)
        // The header says it (not the script's own failure, "view not reachable"), and the job stays.
        #expect(page.contains("id=\"status\">database unreachable: cannot reach the queue: ") && page.contains("class=\"job-name\">mirror<"), "\(page)")
        let metrics = try await offThePool { Result { try WebReply.fetch(base + "metrics") } }.get().body
        #expect(metrics.contains("dlpipe_queue_up 0\n"), "\(metrics)")
        view.signal(SIGTERM)
        #expect(await offThePool { view.waitForExit(within: 20) } == 130)

        // The directory the job wrote into has no state of its own: it says so, as status does.
        let (directory, directoryBase) = try await FleetWebTests.startView([out])
        let api = try await offThePool { Result { try WebReply.fetch(directoryBase + "api/view") } }.get()
        #expect(api.json["state"] as? String == "shared queue", "\(api.body)")
        #expect((api.json["note"] as? String)?.contains("no dlpipe state of its own") == true, "\(api.body)")
        #expect((api.json["hint"] as? String)?.hasSuffix("dlpipe web --queue URL --name mirror") == true, "\(api.body)")
        let status = await dlpipe(["status", out])
        #expect(status.stdout.hasPrefix(api.json["note"] as? String ?? "-"), "one place says it: \(status.stdout)")
        let directoryPage = try await dom(directoryBase)
        #expect(directoryPage.contains("<p class=\"empty lines\">\(out): no dlpipe state of its own"), "\(directoryPage)")
        directory.signal(SIGTERM)
        #expect(await offThePool { directory.waitForExit(within: 20) } == 130)
    }

    @Test func theControlPlanesMessagesSayWhatHappened() async throws {
        let path = dir + "/ok.bin"
        _ = try nginx.put(path, randomBytes: 2_000, seed: 400)
        let jobFile = try job.write("job.lua", """
            dl.add('\(nginx.url(path, host: hosts[0], tls: false))')
            dl.add('\(nginx.url(dir + "/missing.bin", host: hosts[1], tls: false))')
            """)
        let name = "msgs"
        let ran = await offThePool { try? worker(jobFile, name: name, ["--retries", "0"]).finish() }
        #expect(ran?.status == 1, "\(ran?.stderr ?? "")")
        let network = await control(["failures", "--kind", "network"], name: name)
        #expect(network.status == 0 && network.stdout == "no failure of kind network in run #1\n", "\(network)")
        let onHost = await control(["failures", "--host", hosts[0], "--kind", "http"], name: name)
        #expect(onHost.stdout == "no failure on host \(hosts[0]) of kind http in run #1\n", "\(onHost)")

        #expect(await control(["purge", "--older-than", "0s"], name: name).status == 0)
        let none = "no run of job msgs is kept (a worker's start makes one; `dlpipe queue purge` deletes ended ones)\n"
        for verb in [["runs"], ["failures"], ["retry", "--failed"]] {
            let reply = await control(verb, name: name)
            #expect(reply.status == 0 && reply.stdout == none, "\(verb): \(reply)")
        }

        // A run whose only worker was killed holding claims stays open,
        // cancelled, until a worker takes them back: a second cancel finds
        // it settling.
        var urls: [String] = []
        for index in 0..<4 {
            urls.append(try fixture.slowFile("c\(index).bin", size: 1_000_000, seed: UInt64(410 + index), hostIndex: index).url)
        }
        let slowJob = try job.write("slow.lua", urls.map { "dl.add('\($0)')" }.joined(separator: "\n"))
        let doomed = try worker(slowJob, name: "settling", ["-j", "1", "--json"])
        _ = await offThePool { doomed.waitForLine(containing: "\"event\":\"progress\"") }
        doomed.signal(SIGKILL)
        _ = await offThePool { doomed.finish() }
        let first = await control(["cancel"], name: "settling")
        // Run ids count across the queue's jobs: this one's is the second.
        #expect(first.status == 0 && first.stdout.hasPrefix("run #2 cancelled: "), "\(first)")
        let second = await control(["cancel"], name: "settling")
        #expect(second.status == 0 && second.stdout.hasPrefix("run #2 was already cancelled ") && second.stdout.contains("is settling"), "\(second)")
        let secondJSON = try #require(try json(await control(["cancel", "--json"], name: "settling").stdout) as? [String: Any])
        #expect(secondJSON["already_cancelled"] as? Bool == true && secondJSON["queued_cancelled"] as? Int == 0, "\(secondJSON)")
    }
}
