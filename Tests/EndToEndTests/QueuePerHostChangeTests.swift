@testable import DLPipe
import Foundation
import Testing
import TestSupport

/// A worker whose `--per-host` a later worker raised for the whole job: it
/// claims slots at the job's new value, and its engine must run that many
/// transfers too. Its engine had kept the value it started with, so it held
/// job-wide slots it could not use (one transfer at the server while the
/// queue showed three of its slots taken, and the other workers got none).
@Suite struct QueuePerHostChangeTests: QueueRunSuite {
    let fixture: QueueRunFixture

    init() throws {
        fixture = try QueueRunFixture(label: "perhost-change", hosts: ["perhost.queue.test"])
    }

    @Test func aWorkerFollowsTheJobsRaisedPerHost() async throws {
        // 200 KB at 100 KiB/s each: two seconds a transfer, so they overlap.
        var files: [(name: String, url: String, bytes: [UInt8])] = []
        for index in 0..<9 {
            files.append(try fixture.slowFile("p\(index).bin", size: 200_000, seed: UInt64(40 + index), hostIndex: 0))
        }
        let jobFile = try job.write("job.lua", files.map { "dl.add('\($0.url)')" }.joined(separator: "\n") + "\n")
        func arguments(perHost: Int, concurrency: Int) -> [String] {
            ["run", jobFile, "-d", out, "--queue", queue, "--name", "perhost-change", "--settle", "1",
             "-j", "\(concurrency)", "--per-host", "\(perHost)", "--json"] + resolving
        }
        let first = try Subprocess(
            Paths.binary, arguments(perHost: 1, concurrency: 4), environment: ["NO_COLOR": "1"], timeout: 180)
        // Once the first transfers, the second worker raises the job's per_host.
        _ = await offThePool { first.waitForLine(containing: "\"event\":\"progress\"") }
        let second = try Subprocess(
            Paths.binary, arguments(perHost: 3, concurrency: 1), environment: ["NO_COLOR": "1"], timeout: 180)
        let ended = await offThePool { [first.finish(), second.finish()] }
        #expect(ended.map(\.status) == [0, 0], "\(ended.map(\.stderr))")
        for file in files { #expect(sameBytes(out + "/" + file.name, file.bytes), "\(file.name)") }
        let requests = nginx.requests(matching: "/slow" + dir + "/")
        #expect(requests.count == files.count)
        // The second worker runs one at a time: a peak of 3 needs two of the
        // first's at once, which its engine's old cap of 1 never allowed.
        #expect(Nginx.peak(requests) == 3, "\(requests.map { ($0.uri, $0.start, $0.end) })")
    }
}
