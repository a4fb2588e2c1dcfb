@testable import DLPipeQueue
import Foundation
import Testing
import TestSupport

/// A worker of a paused job says so, rather than wait without a word: once
/// when it finds the job paused (started into the pause, or paused while it
/// runs), on stderr and as a `job` event under `--json`, and once when the
/// job is resumed. Every wait for a line the worker prints is bounded (60 s,
/// the worker then killed): a worker that never says it fails the test there.
@Suite struct QueuePauseNoticeTests: QueueRunSuite {
    let fixture: QueueRunFixture

    init() throws {
        fixture = try QueueRunFixture(label: "pausenote", hosts: ["a.pausenote.test"])
    }

    private func worker(_ jobFile: String, name: String) throws -> Subprocess {
        try Subprocess.queueWorker(
            ["run", jobFile, "-d", out, "--queue", queue, "--name", name, "--settle", "0", "--lease", "3", "-j", "1", "--json"]
                + resolving)
    }

    private func control(_ verb: String, name: String) async -> Int32 {
        await offThePool {
            (try? Subprocess(Paths.binary, ["queue", verb, "--queue", queue, "--name", name], timeout: 60).finish().status) ?? -1
        }
    }

    /// The worker's stdout lines up to the first that contains `text` (nil:
    /// it ended first). A worker that never prints it is killed after 60 s
    /// (it would wait for ever: a paused job's worker does), and the wait fails.
    private func lines(of process: Subprocess, upTo text: String) async throws -> [String]? {
        do {
            return try await within(seconds: 60, "a line with \(text)") {
                await offThePool {
                    var read: [String] = []
                    while let line = process.readStdoutLine() {
                        read.append(line)
                        if line.contains(text) { return read }
                    }
                    return nil
                }
            }
        } catch {
            process.signal(SIGKILL)
            throw error
        }
    }

    @Test func aWorkerSaysOnceThatItsJobIsPausedAndWhenItResumes() async throws {
        // 400 KB at 100 KiB/s each: the first still transfers when the job is paused.
        let urls = try (0..<4).map { try fixture.slowFile("n\($0).bin", size: 400_000, seed: UInt64(60 + $0), hostIndex: 0).url }
        let jobFile = try job.write("job.lua", urls.map { "dl.add('\($0)')" }.joined(separator: "\n"))
        let name = "noticed"
        let first = try worker(jobFile, name: name)
        #expect(try await lines(of: first, upTo: "\"event\":\"progress\"") != nil)
        #expect(await control("pause", name: name) == 0)
        let pausedEvent = "{\"event\":\"job\",\"job\":\"noticed\",\"state\":\"paused\"}"
        let resumedEvent = "{\"event\":\"job\",\"job\":\"noticed\",\"state\":\"resumed\"}"
        var firstLines = try #require(try await lines(of: first, upTo: pausedEvent), "the running worker says the job is paused")
        // Started into the pause: it says so too, and claims nothing.
        let late = try worker(jobFile, name: name)
        var lateLines = try #require(try await lines(of: late, upTo: pausedEvent), "a worker started while paused says so")
        #expect(await control("resume", name: name) == 0)
        firstLines += try #require(try await lines(of: first, upTo: resumedEvent), "the job was resumed")
        lateLines += try #require(try await lines(of: late, upTo: resumedEvent))
        let ended = await offThePool { [first, late].map { $0.finish() } }
        #expect(ended.map(\.status) == [0, 0], "\(ended.map(\.stderr))")
        for (index, (seen, end)) in zip([firstLines, lateLines], ended).enumerated() {
            let events = (seen + end.stdout.split(separator: "\n").map(String.init)).filter { $0.hasPrefix("{\"event\":\"job\"") }
            #expect(events == [pausedEvent, resumedEvent], "worker \(index): \(events)")
            #expect(end.stderr.components(separatedBy: "dlpipe: job \"noticed\" is paused (dlpipe queue pause): this worker claims nothing new and waits; dlpipe queue resume lets it go on").count == 2, "worker \(index): \(end.stderr)")
            #expect(end.stderr.components(separatedBy: "dlpipe: job \"noticed\" was resumed: this worker claims again").count == 2, "worker \(index): \(end.stderr)")
        }
        #expect(try statuses(name) == ["finished": 4])
    }
}
