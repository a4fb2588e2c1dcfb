import Foundation
import Testing
import TestSupport

/// Issue 13: the four example programs of Sources/DLPipeExample, each run as
/// a process against the loopback server (its own deadline: a hang fails).
@Suite struct ExamplePatternTests {
    let server: FaultServer
    let out: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("patterns")
    }

    /// Runs `dlpipe-example ARGS` and waits off the concurrency pool.
    private func example(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        let path = (Paths.binary as NSString).deletingLastPathComponent + "/dlpipe-example"
        let process = try Subprocess(path, arguments, timeout: 120)
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: process.finish()) }
        }
    }

    /// A PNG header of `width` x `height` followed by `padding` bytes: enough
    /// for the image operation, which reads the size from IHDR.
    @discardableResult
    private func png(_ name: String, width: UInt32, height: UInt32, padding: Int, seed: UInt64) throws -> [UInt8] {
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
        for word in [width, height] { bytes += withUnsafeBytes(of: word.bigEndian) { Array($0) } }
        var generator = SplitMix64(seed: seed)
        bytes += (0..<padding).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return try server.put(name, bytes: bytes)
    }

    private func lines(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }

    @Test func anImageOperationOnAQueueReportsProgressAndReadsEachImage() async throws {
        try png("a.png", width: 640, height: 480, padding: 200_000, seed: 1)
        try png("b.png", width: 32, height: 16, padding: 200_000, seed: 2)
        try png("c.png", width: 1, height: 1, padding: 10, seed: 3)
        let urls = [server.url("/files/a.png?throttle=400000"), server.url("/files/b.png?throttle=400000"),
                    server.url("/files/c.png")]
        let run = try await example(["image-queue", out] + urls)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        let output = lines(run.stdout)
        #expect(output.contains("image \(urls[0]) 640x480"), "\(run.stdout)")
        #expect(output.contains("image \(urls[1]) 32x16"))
        #expect(output.contains("image \(urls[2]) 1x1"))
        #expect(output.contains { $0.hasPrefix("progress \(urls[0]) ") }, "progress of a throttled image")
        #expect(listing(out) == ["a.png", "b.png", "c.png"])

        let missing = try await example(["image-queue", out, server.url("/files/none.png")])
        #expect(missing.status == 1)
        #expect(missing.stdout.contains("failed \(server.url("/files/none.png")): http: HTTP 404"), "\(missing.stdout)")
    }

    @Test func aSuspendedTaskResumesWithARangeAndTakesTheServersName() async throws {
        let data = try server.put("blob", randomBytes: 300_000)
        let cd = "attachment%3B%20filename%3D%22report.pdf%22"
        let run = try await example(["suspendable", out, server.url("/files/blob?cd=\(cd)&throttle=150000")])
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        let output = lines(run.stdout)
        let suspend = try #require(output.firstIndex(of: "suspend"), "\(run.stdout)")
        let resumed = try #require(output.firstIndex(of: "suspended; resume"), "\(run.stdout)")
        #expect(suspend < resumed)
        #expect(output.last == "finished report.pdf 300000 bytes", "\(run.stdout)")
        #expect(listing(out) == ["report.pdf"])
        #expect(sameBytes(out + "/report.pdf", data))
        let ranges = try server.requests(matching: "/files/blob").map { ($0["headers"] as? [String: String])?["range"] }
        #expect(ranges.count == 2 && ranges[0] == nil && ranges[1]?.hasPrefix("bytes=") == true, "\(ranges)")
    }

    @Test func aLoadingViewModelLoadsReloadsFailsAndCancels() async throws {
        try png("pic.png", width: 8, height: 8, padding: 1000, seed: 4)
        try png("slow.png", width: 8, height: 8, padding: 600_000, seed: 5)
        let run = try await example([
            "view-model", out, server.url("/files/pic.png"), server.url("/files/missing.png"),
            server.url("/files/slow.png?throttle=100000"),
        ])
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        // Each progress event sets `.loading(fraction:)` again, which prints
        // the same line (a download's last progress reaches its total, so even
        // a small file gets one): repeats of a line are one state.
        let output = lines(run.stdout).filter { !$0.hasPrefix("slow: loading") }
            .reduce(into: [String]()) { kept, line in if kept.last != line { kept.append(line) } }
        #expect(output == [
            "good: loading", "good: loaded pic.png",
            "good: loading", "good: loaded pic.png",  // reload: a new download, asked conditionally
            "bad: loading", "bad: failed http",
            "slow: idle", "all states as expected",
        ], "\(run.stdout)")
        #expect(lines(run.stdout).contains("slow: loading"))
        let asked = try server.requests(matching: "/files/pic.png").map { $0["headers"] as? [String: String] ?? [:] }
        #expect(asked.count == 2, "reload asks the server again")
        #expect(asked.last?["if-none-match"] != nil, "with the state's validator: \(asked)")
        #expect(listing(out) == ["pic.png"], "one file, a failed and a cancelled load leave none")
    }

    @Test func aDelegateDownloaderRunsTwoAtOnceAndAcceptsAResumed206() async throws {
        let first = try server.put("first.bin", randomBytes: 400_000, seed: 6)
        let second = try server.put("second.bin", randomBytes: 400_000, seed: 7)
        let urls = [server.url("/files/first.bin?reset=100000&reset_times=1&throttle=400000"),
                    server.url("/files/second.bin?throttle=300000")]
        let run = try await example(["two-at-once", out] + urls)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        let output = lines(run.stdout)
        #expect(output.contains("response \(urls[0]) 200"))
        #expect(output.contains { $0.hasPrefix("response \(urls[0]) 206 resuming from ") }, "\(run.stdout)")
        #expect(output.contains("response \(urls[1]) 200"))
        #expect(output.contains("complete \(urls[0]) 400000 bytes") && output.contains("complete \(urls[1]) 400000 bytes"))
        #expect(sameBytes(out + "/first.bin", first) && sameBytes(out + "/second.bin", second))
        // Two at once: each made progress before the other completed.
        for (one, other) in [(urls[0], urls[1]), (urls[1], urls[0])] {
            let progress = output.firstIndex { $0.hasPrefix("progress \(one) ") }
            let completion = output.firstIndex(of: "complete \(other) 400000 bytes")
            #expect(progress != nil && completion != nil && progress! < completion!, "\(run.stdout)")
        }
    }
}
