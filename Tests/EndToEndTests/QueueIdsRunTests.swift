@testable import DLPipe
@testable import DLPipeQueue
import Foundation
import Testing
import TestSupport

/// The ids a job's top level got are the ids its handlers see, in every
/// worker of a shared queue (docs/scale-out.md, "A run, `done` and the exit code"): `local feed =
/// dl.add(url)` and `d.id == feed` in a `finished` handler, a table keyed by
/// top-level ids, `d.parent == feed` and `meta = { from = d.id }` behave the
/// same without a queue, with one worker and with two. The command line's
/// lines keep the queue's row ids, a script's line included.
@Suite struct QueueIdsRunTests: QueueRunSuite {
    let fixture: QueueRunFixture

    init() throws {
        fixture = try QueueRunFixture(label: "ids", hosts: ["a.ids.test", "b.ids.test"])
    }

    /// Eight children of 200 KB on /slow/ (0.7 s or more each), listed by
    /// feed.txt: one worker that takes one at a time needs 6 s or more for them.
    private func children() throws -> [(name: String, url: String, bytes: [UInt8])] {
        try (0..<8).map { try fixture.slowFile("c\($0).bin", size: 200_000, seed: UInt64($0 + 1), hostIndex: $0) }
    }

    private func writeJob(listing children: [(name: String, url: String, bytes: [UInt8])]) throws -> String {
        _ = try nginx.put(dir + "/feed.txt", bytes: Array(children.map { $0.url + "\n" }.joined().utf8))
        _ = try nginx.put(dir + "/extra.bin", randomBytes: 2_000, seed: 99)
        return try job.write("job.lua", """
            local base = dl.var.base
            local feed = dl.add{ url = base .. "/feed.txt", name = "feed.txt" }
            local extra = dl.add{ url = base .. "/extra.bin", name = "extra.bin" }
            local role = { [feed] = "feed", [extra] = "extra" }
            dl.log("top-level ids " .. feed .. " " .. extra)
            dl.on("finished", function(d, f)
              if role[d.id] then dl.log("top-level " .. role[d.id] .. " finished") end
              if d.id == feed then
                for url in dl.read(f.path):gmatch("%S+") do
                  dl.add{ url = url, dir = "children", meta = { from = d.id } }
                end
                local again = dl.add{ url = base .. "/extra.bin", name = "extra.bin" }
                dl.log("feed read; extra.bin added again gives " .. (again == extra and "extra's id" or tostring(again)))
              elseif d.parent ~= nil then
                dl.log("child " .. d.name .. ": parent " .. (d.parent == feed and "is" or "is not")
                  .. " the feed, meta.from " .. (d.meta.from == feed and "is" or "is not") .. " the feed")
              end
            end)
            """)
    }

    private func arguments(_ jobFile: String, _ output: String, concurrency: Int = 4) -> [String] {
        ["run", jobFile, "-d", output, "-j", String(concurrency), "--per-host", "2",
         "--var", "base=" + nginx.url(dir, host: hosts[0], tls: false)] + resolving
    }

    /// What the job's handlers logged, without the `[job.lua:N #ID] ` prefix, sorted.
    private func facts(_ stderr: String) -> [String] {
        stderr.split(separator: "\n").compactMap { line -> String? in
            // "[/tmp/.../job.lua:7 #3] text"
            guard line.hasPrefix("["), let end = line.range(of: "] "), line[..<end.lowerBound].contains("job.lua:") else { return nil }
            let text = String(line[end.upperBound...])
            return text.hasPrefix("top-level ids") ? nil : text
        }.sorted()
    }

    private func expectedFacts(_ children: [(name: String, url: String, bytes: [UInt8])]) -> [String] {
        (children.map { "child \($0.name): parent is the feed, meta.from is the feed" }
            + ["feed read; extra.bin added again gives extra's id", "top-level extra finished", "top-level feed finished"]).sorted()
    }

    private func expectChildren(_ children: [(name: String, url: String, bytes: [UInt8])], in output: String, _ label: String) {
        #expect(listing(output + "/children") == children.map(\.name).sorted(), "\(label)")
        #expect(children.allSatisfy { sameBytes(output + "/children/" + $0.name, $0.bytes) }, "\(label): a child is not whole")
        #expect(listing(output).filter { !$0.hasPrefix(".") } == ["children", "extra.bin", "feed.txt"], "\(label)")
    }

    /// The row id of the download of `suffix` in the queue.
    private func row(_ database: String, _ suffix: String) throws -> Int64 {
        let connection = try PostgresConnection(PostgresAddress(database))
        return try connection.execute("SELECT id FROM dlpipe.downloads WHERE url LIKE $1", [.text("%" + suffix)]).rows[0].int("id")
    }

    /// The script's line and the command line's own line about the feed
    /// name it by one id: `row`, the queue's (1 without a queue).
    private func expectLinesName(_ stderr: String, row: Int64, _ label: String) {
        let lines = stderr.split(separator: "\n")
        let script = lines.filter { $0.hasSuffix("top-level feed finished") }
        #expect(script.count == 1 && script[0].contains(" #\(row)] "), "\(label): \(script)")
        let engine = lines.filter { $0.hasPrefix("finished ") && $0.contains("/feed.txt") }
        #expect(engine.count == 1 && engine[0].hasSuffix("[\(row)]"), "\(label): \(engine)")
    }

    @Test func handlersSeeTheTopLevelsIdsWithoutAQueueWithOneWorkerAndWithTwo() async throws {
        let children = try children()
        let jobFile = try writeJob(listing: children)
        let expected = expectedFacts(children)

        // Without a queue: the baseline.
        let plainOut = try TempDir.make("ids-plain")
        let plain = try await DLPipeRun.run(arguments(jobFile, plainOut))
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.stderr.contains("top-level ids 1 2"), "\(plain.stderr)")
        #expect(facts(plain.stderr) == expected, "\(plain.stderr)")
        expectChildren(children, in: plainOut, "without a queue")
        expectLinesName(plain.stderr, row: 1, "without a queue")

        // One worker.
        let oneQueue = try PostgresCluster.shared().freshDatabase("ids-one")
        let one = try await DLPipeRun.run(arguments(jobFile, out) + ["--queue", oneQueue, "--name", "ids", "--settle", "0"])
        #expect(one.status == 0, "\(one.stderr)")
        #expect(one.stderr.contains("top-level ids -1 -2"), "\(one.stderr)")
        #expect(facts(one.stderr) == expected, "\(one.stderr)")
        expectChildren(children, in: out, "one worker")
        expectLinesName(one.stderr, row: try row(oneQueue, "/feed.txt"), "one worker")

        // Two workers: the second starts once the first has read the feed (its
        // line awaited), so that the first runs the feed and both run
        // children: the second's handlers see the first's adds under the ids
        // its own top level got.
        let twoQueue = try PostgresCluster.shared().freshDatabase("ids-two")
        let twoOut = try TempDir.make("ids-two")
        // One transfer at a time each: the first cannot take every child.
        let workerArguments = arguments(jobFile, twoOut, concurrency: 1) + ["--queue", twoQueue, "--name", "ids", "--settle", "0"]
        let first = try Subprocess.queueWorker(workerArguments)
        let readFeed: (read: Bool, lines: [String])
        do {
            readFeed = try await within(seconds: 90, "the first worker's line about the feed") {
                await offThePool { () -> (read: Bool, lines: [String]) in
                    var lines: [String] = []
                    while let line = first.readStderrLine() {
                        lines.append(line)
                        if line.contains("feed read;") { return (true, lines) }
                    }
                    return (false, lines)
                }
            }
        } catch {
            first.signal(SIGKILL)
            throw error
        }
        try #require(readFeed.read, "the first worker never read the feed: \(readFeed.lines.joined(separator: "\n"))")
        let second = try Subprocess.queueWorker(workerArguments)
        let (a, b): ((status: Int32, stdout: String, stderr: String), (status: Int32, stdout: String, stderr: String))
        do {
            (a, b) = try await within(seconds: 120, "the two workers' exits") {
                async let a = offThePool { first.finish() }
                async let b = offThePool { second.finish() }
                return await (a, b)
            }
        } catch {
            first.signal(SIGKILL)
            second.signal(SIGKILL)
            throw error
        }
        let firstErr = readFeed.lines.joined(separator: "\n") + "\n" + a.stderr
        #expect(a.status == 0, "\(firstErr)")
        #expect(b.status == 0, "\(b.stderr)")
        #expect(firstErr.contains("top-level ids -1 -2") && b.stderr.contains("top-level ids -1 -2"), "\(firstErr)\n---\n\(b.stderr)")
        #expect((facts(firstErr) + facts(b.stderr)).sorted() == expected, "\(firstErr)\n---\n\(b.stderr)")
        let secondsChildren = facts(b.stderr).filter { $0.hasPrefix("child ") }.count
        print("children run by the second worker: \(secondsChildren) of \(children.count)")
        #expect(secondsChildren >= 1, "the second worker ran no child: \(b.stderr)")
        expectChildren(children, in: twoOut, "two workers")
        expectLinesName(firstErr, row: try row(twoQueue, "/feed.txt"), "two workers")
    }
}
