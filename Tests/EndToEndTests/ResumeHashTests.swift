import Foundation
import Testing

/// A download that resumes a large part file with a checksum to verify hashes
/// the bytes already on disk off the engine thread: the other transfers go on
/// meanwhile, and the checksum still holds (or still fails) over the whole file.
/// It used to hash them inside curl's write callback, where every transfer of
/// the run waited for it.
@Suite struct ResumeHashTests: ServerJobSuite {
    let fixture: ServerJobFixture
    /// 300 MiB of zeros: sparse files on both sides, so no disk is spent, but
    /// hashing them takes a while (a few hundred milliseconds at the least).
    static let size: Int64 = 300 * 1024 * 1024
    static let zerosSHA256 = "17a88af83717f68b8bd97873ffcf022c8aed703416fe9b08e0fa9e3287692bf0"

    init() throws {
        fixture = try ServerJobFixture(label: "resume-hash")
        try server.put("big.bin", bytes: [])
        #expect(truncate(server.root + "/big.bin", off_t(Self.size)) == 0)
        try server.put("small.txt", bytes: Array("small".utf8))
    }

    /// The URL of the big file: every response stalls after 50 KB of its body,
    /// so that the first run never finishes it, whatever retries it makes; the
    /// resume asks for the last 1,000 bytes only, which come whole.
    var bigURL: String { server.url("/files/big.bin?stall=50000") }

    /// A killed run leaves big.bin.part and its record; the part file is then
    /// grown (sparse) to all but the last 1,000 bytes, which are zeros like the
    /// server's, so that the next run resumes with 300 MiB to hash.
    private func leaveALargePartFile() async throws {
        let first = try Subprocess(Paths.binary, ["get", bigURL, "-d", out, "--json"])
        // The progress of the stall point: the part file holds its 50 KB (an
        // earlier progress event may come before the part file exists).
        let started = await offThePool { () -> Bool in
            let started = first.waitForLine(containing: "\"bytes\":50000,")
            first.signal(SIGKILL)  // at once, on this thread
            first.waitForExit()
            return started
        }
        #expect(started)
        #expect(truncate(out + "/big.bin.part", off_t(Self.size - 1000)) == 0)
    }

    /// The resume with its checksum, and a small download delayed 50 ms by the
    /// server; returns the run.
    private func resume(sha256: String) async throws -> DLPipeRun {
        try job.write("job.lua", """
            dl.add{ url = dl.var.big, sha256 = dl.var.sha256 }
            dl.add(dl.var.small)
            """)
        return try await job.run("job.lua", out: out, [
            "-j", "2", "--var", "big=\(bigURL)", "--var", "small=\(server.url("/files/small.txt?delay=0.05"))",
            "--var", "sha256=\(sha256)",
        ])
    }

    @Test func anotherDownloadGoesOnWhileTheResumedBytesAreHashed() async throws {
        try await leaveALargePartFile()
        let run = try await resume(sha256: Self.zerosSHA256)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(FileSystemSize.of(out + "/big.bin") == Self.size)
        let ranges = try server.requests(matching: "/files/big.bin").compactMap { ($0["headers"] as? [String: String])?["range"] }
        #expect(ranges.last == "bytes=\(Self.size - 1000)-", "resumed, not fetched again")
        // The small download's response is read while the big one's bytes are
        // hashed; on the engine thread, the hash held it until the big one's
        // response was in.
        let responses = run.events.filter { $0["event"] as? String == "response" }.compactMap { $0["url"] as? String }
        #expect(responses.count == 2)
        #expect(responses.first?.contains("small.txt") == true, "the small response waited for the hash: \(responses)")
    }

    @Test func aWrongChecksumStillFailsAfterTheResume() async throws {
        try await leaveALargePartFile()
        let run = try await resume(sha256: String(repeating: "0", count: 64))
        #expect(run.status == 1)
        let failed = run.events.first { $0["event"] as? String == "failed" }
        #expect(failed?["kind"] as? String == "checksum", "\(run.stdout)")
        #expect(!listing(out).contains("big.bin"), "never a file under the final name")
        #expect(listing(out).contains("small.txt"))
    }
}

/// A file's size, or nil.
enum FileSystemSize {
    static func of(_ path: String) -> Int64? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value
    }
}
