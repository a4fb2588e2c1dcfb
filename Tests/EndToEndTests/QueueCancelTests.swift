@testable import DLPipe
@testable import DLPipeQueue
import Foundation
import Testing
import TestSupport

/// `dl.cancel` of a download that a handler of this worker just added: the
/// worker's own claim loop may claim it between the add and the cancel (the
/// add wakes it), so that at the cancel the row is neither ready in the
/// queue nor open in the engine yet. It must still end cancelled, and no
/// file of it placed. (Whether a request goes out depends on how far the
/// claim got: one the engine started before the cancel came is stopped
/// mid-transfer, as without a queue; on a loaded machine a few are.)
/// Before this was built, 22 of the 60 ran to the end.
@Suite struct QueueCancelTests: QueueRunSuite {
    let fixture: QueueRunFixture

    init() throws {
        fixture = try QueueRunFixture(label: "cancel", hosts: ["cancel.queue.test"])
    }

    @Test func aDownloadCancelledRightAfterItsAddEndsCancelled() async throws {
        let seedPath = dir + "/seed.bin"
        let seed = try nginx.put(seedPath, randomBytes: 2_000, seed: 7)
        let count = 60
        var urls: [String] = []
        // From /slow/ (100 KiB/s), a second each: one the engine started
        // before its cancel came is still transferring when the cancel
        // comes, unless the handler's thread waited a second between the
        // two calls (under the suite's load, 1 KB files were sometimes whole
        // and placed by then, and a download past its placing finishes).
        for index in 0..<count {
            urls.append(try fixture.slowFile("x\(index).bin", size: 100_000 + index, seed: UInt64(100 + index), hostIndex: 0).url)
        }
        let jobFile = try job.write("job.lua", """
            local urls = { \(urls.map { "'\($0)'" }.joined(separator: ", ")) }
            dl.add('\(nginx.url(seedPath, host: hosts[0], tls: false))')
            dl.on("finished", function(d)
              if d.url:match("seed%.bin$") then
                for _, url in ipairs(urls) do dl.cancel(dl.add(url)) end
              end
            end)
            dl.on("done", function(s) dl.log("done: cancelled " .. s.cancelled .. ", finished " .. s.finished) end)
            """)
        let run = await offThePool { [self] in
            try? Subprocess.queueWorker(
                ["run", jobFile, "-d", out, "--queue", queue, "--name", "cancel-added", "--settle", "1", "-j", "8", "--per-host", "8"] + resolving
            ).finish()
        }
        let output = (run?.stdout ?? "") + (run?.stderr ?? "")
        #expect(run?.status == 0, "\(output)")
        #expect(output.contains("done: cancelled \(count), finished 1"), "\(output)")
        #expect(listing(out) == ["seed.bin"])
        #expect(sameBytes(out + "/seed.bin", seed))
        let connection = try PostgresConnection(PostgresAddress(queue))
        #expect(try connection.execute(
            "SELECT count(*) AS n FROM dlpipe.downloads d JOIN dlpipe.jobs j ON j.id = d.job_id WHERE j.name = 'cancel-added' AND d.status = 'cancelled'"
        ).rows[0].int("n") == Int64(count))
    }
}
