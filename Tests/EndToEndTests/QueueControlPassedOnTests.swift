@testable import DLPipe
import Foundation
import Testing
import TestSupport

/// `dl.resume` and `dl.cancel` in a handler of one worker, of downloads
/// another worker holds: they did nothing (a `done` that resumed a paused
/// download in the worker that did not hold it left it to fail "paused and
/// never resumed"). Now they are passed on to the holder, which applies
/// them in its engine.
@Suite struct QueueControlPassedOnTests: QueueRunSuite {
    let fixture: QueueRunFixture

    init() throws {
        fixture = try QueueRunFixture(label: "passed-on", hosts: ["passed.queue.test"])
    }

    private func worker(_ jobFile: String, _ extra: [String]) throws -> Subprocess {
        try Subprocess(
            Paths.binary,
            ["run", jobFile, "-d", out, "--queue", queue, "--name", "passed-on", "--settle", "1"] + extra + resolving,
            environment: ["NO_COLOR": "1"], timeout: 180)
    }

    @Test func aResumeAndACancelReachTheWorkerThatHoldsTheDownloads() async throws {
        // The first worker (-j 1) pauses `paused` at its response, then
        // transfers `long` (5 MB at 100 KiB/s), so it has no room for
        // `trigger`: the second worker takes it, and its handler resumes
        // the one and cancels the other, both held by the first.
        let paused = try fixture.slowFile("paused.bin", size: 200_000, seed: 40, hostIndex: 0)
        let long = try fixture.slowFile("long.bin", size: 5_000_000, seed: 41, hostIndex: 0)
        let triggerPath = dir + "/trigger.bin"
        let trigger = try nginx.put(triggerPath, randomBytes: 1_000, seed: 42)
        let jobFile = try job.write("job.lua", """
            local paused = dl.add('\(paused.url)')
            local long = dl.add('\(long.url)')
            dl.add('\(nginx.url(triggerPath, host: hosts[0], tls: false))')
            dl.on("response", function(d)
              if d.id == paused and d.attempt == 1 then dl.pause(d.id); dl.log("paused it") end
            end)
            dl.on("finished", function(d)
              if d.url:match("trigger%.bin$") then dl.resume(paused); dl.cancel(long) end
            end)
            """)
        let first = try worker(jobFile, ["-j", "1"])
        let pausedIt = await offThePool { () -> Bool in
            while let line = first.readStderrLine() {
                if line.contains("paused it") { return true }
            }
            return false
        }
        try #require(pausedIt)
        let second = try worker(jobFile, ["-j", "2"])
        let ended = await offThePool { [first, second] in (first.finish(), second.finish()) }
        let (one, two) = ended
        #expect(one.status == 0 && two.status == 0, "\(one.stderr)\n---\n\(two.stderr)")
        #expect(two.stderr.contains("trigger.bin"), "the second worker fetched the trigger: \(two.stderr)")
        #expect(!two.stderr.contains("warning"), "\(two.stderr)")
        // The cancel ended it in the worker that held it, which says so.
        #expect(one.stderr.contains("long.bin") && one.stderr.contains("cancelled"), "\(one.stderr)")
        #expect(sameBytes(out + "/paused.bin", paused.bytes))
        #expect(sameBytes(out + "/trigger.bin", trigger))
        #expect(!FileManager.default.fileExists(atPath: out + "/long.bin"))
        #expect(partFiles(under: out).isEmpty)
        #expect(try statuses("passed-on") == ["cancelled": 1, "finished": 2])
    }
}
