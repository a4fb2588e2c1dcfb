@testable import DLPipe
import Foundation
import Testing
import TestSupport

/// A `--follow` worker's runs end while it goes on: it says so for each run
/// it was in, once, as another worker says it when it exits (`--json`'s
/// `done` event, or the summary line), with the run's exit code. Its engine
/// never drains, so before this it printed neither, whatever runs it ended.
@Suite struct QueueFollowDoneTests: QueueRunSuite {
    let fixture: QueueRunFixture

    init() throws {
        fixture = try QueueRunFixture(label: "follow-done", hosts: ["follow.queue.test"])
    }

    /// A job whose `--var set=N` adds the URLs of set N; set 2 has a 404.
    private func jobFile() throws -> String {
        var sets: [String] = []
        for (number, names) in [(1, ["a.bin", "b.bin"]), (2, ["c.bin"])] {
            var urls: [String] = []
            for name in names {
                let path = dir + "/" + name
                _ = try nginx.put(path, randomBytes: 1_000, seed: UInt64(name.utf8.first!))
                urls.append("'\(nginx.url(path, host: hosts[0], tls: false))'")
            }
            if number == 2 { urls.append("'\(nginx.url(dir + "/missing.bin", host: hosts[0], tls: false))'") }
            sets.append("[\"\(number)\"] = { \(urls.joined(separator: ", ")) }")
        }
        return try job.write("job.lua", """
            local sets = { \(sets.joined(separator: ", ")) }
            for _, url in ipairs(sets[dl.var.set]) do dl.add(url) end
            """)
    }

    private func arguments(_ jobFile: String, set: Int, _ extra: [String]) -> [String] {
        ["run", jobFile, "-d", out, "--queue", queue, "--name", "follow-done", "--settle", "1", "--var", "set=\(set)"]
            + extra + resolving
    }

    /// The next `done` event on the worker's stdout, decoded.
    private func nextDone(_ worker: Subprocess) async -> [String: Any]? {
        let line = await offThePool { () -> String? in
            while let line = worker.readStdoutLine() {
                if line.contains("\"event\":\"done\"") { return line }
            }
            return nil
        }
        return line.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    @Test func aFollowWorkerWritesADoneEventForEachRun() async throws {
        let path = try jobFile()
        let follower = try Subprocess(
            Paths.binary, arguments(path, set: 1, ["--follow", "--json"]), environment: ["NO_COLOR": "1"], timeout: 180)
        // Its own run: it ran `done`, so it has the job's counts too.
        let first = try #require(await nextDone(follower))
        #expect(first["exit_code"] as? Int == 0)
        #expect(first["finished"] as? Int == 2)
        #expect((first["job"] as? [String: Any])?["finished"] as? Int == 2)
        let firstRun = try #require(first["run"] as? Int)
        // A cron worker opens the next run; the follower joins it.
        let cron = await offThePool { [self] in
            try? Subprocess(Paths.binary, arguments(path, set: 2, []), environment: ["NO_COLOR": "1"], timeout: 180).finish()
        }
        #expect(cron?.status == 1, "the 404 fails the run: \(cron?.stderr ?? "")")
        let second = try #require(await nextDone(follower))
        #expect(second["exit_code"] as? Int == 1)
        #expect(try #require(second["run"] as? Int) > firstRun)
        follower.signal(SIGTERM)
        let ended = await offThePool { follower.finish() }
        #expect(ended.status == 130, "\(ended.stderr)")
        // Once a run: no third event for either.
        #expect(!ended.stdout.contains("\"event\":\"done\""), "\(ended.stdout)")
        #expect(listing(out).filter { !$0.hasPrefix(".") }.sorted() == ["a.bin", "b.bin", "c.bin"])
    }

    @Test func aFollowWorkerPrintsASummaryLineForEachRun() async throws {
        let path = try jobFile()
        let follower = try Subprocess(
            Paths.binary, arguments(path, set: 1, ["--follow"]), environment: ["NO_COLOR": "1"], timeout: 180)
        let line = await offThePool { () -> String? in
            while let line = follower.readStderrLine() {
                if line.contains("of the job ended") { return line }
            }
            return nil
        }
        follower.signal(SIGTERM)
        let ended = await offThePool { follower.finish() }
        #expect(ended.status == 130)
        let text = try #require(line)
        #expect(text.hasPrefix("dlpipe: 2 finished ("), "\(text)")
        #expect(text.range(of: #"; run \d+ of the job ended, exit 0$"#, options: .regularExpression) != nil, "\(text)")
    }

    /// A run that opened and ended while the follower claimed nothing of it
    /// and did not look (here it is stopped; on a loaded machine a cron
    /// worker's run of a second was enough): it said nothing of that run.
    @Test func aFollowWorkerThatMissedARunSaysItEnded() async throws {
        let path = try jobFile()
        // A long lease: stopped, it stays alive for the queue. A shorter
        // watchdog than the others': a missed event fails in a minute.
        let follower = try Subprocess(
            Paths.binary, arguments(path, set: 1, ["--follow", "--json", "--lease", "120"]), environment: ["NO_COLOR": "1"],
            timeout: 60)
        let first = try #require(await nextDone(follower))
        let firstRun = try #require(first["run"] as? Int)
        follower.signal(SIGSTOP)
        let cron = await offThePool { [self] in
            try? Subprocess(Paths.binary, arguments(path, set: 2, []), environment: ["NO_COLOR": "1"], timeout: 180).finish()
        }
        follower.signal(SIGCONT)
        #expect(cron?.status == 1, "\(cron?.stderr ?? "")")
        let missed = try #require(await nextDone(follower))
        #expect(missed["exit_code"] as? Int == 1)
        #expect(try #require(missed["run"] as? Int) > firstRun)
        #expect(missed["finished"] as? Int == 0, "it fetched nothing in that run")
        follower.signal(SIGTERM)
        let ended = await offThePool { follower.finish() }
        #expect(ended.status == 130, "\(ended.stderr)")
    }
}
