import Foundation
import Testing

/// `--compressed` past libcurl's 64 MiB pause buffer (issue 35): a body that
/// decodes to more is stored decoded, streamed; with `max_size` it fails as
/// `size`. A single huge response header is the head-limit error, not
/// "Out of memory", and not retried.
@Suite struct CompressedLimitsTests {
    let server: FaultServer
    let out: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("compressed-limits")
    }

    @Test func aBodyDecodingPast64MiBIsStoredDecoded() async throws {
        defer { try? FileManager.default.removeItem(atPath: out) }
        let run = try await DLPipeRun.run(
            ["get", "--compressed", server.url("/gzip-zeros?mb=80"), "-d", out, "-o", "zeros.bin", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        var info = stat()
        #expect(stat(out + "/zeros.bin", &info) == 0 && info.st_size == 80 << 20)
        let handle = try #require(FileHandle(forReadingAtPath: out + "/zeros.bin"))
        try handle.seek(toOffset: UInt64(79 << 20))
        #expect(handle.readData(ofLength: 1 << 20).allSatisfy { $0 == 0 }, "decoded bytes")
        try handle.close()
        #expect(try server.requests(matching: "/gzip-zeros").count == 1, "no retry")
        #expect(run.events("finished").first?["bytes"] as? Int == 80 << 20)
    }

    @Test func withMaxSizeItFailsAsSize() async throws {
        let job = try LuaJob()
        try job.write("job.lua", """
            dl.add{ url = "\(server.url("/gzip-zeros?mb=80"))", max_size = 5000000 }
            """)
        let run = try await DLPipeRun.run(["run", job.directory + "/job.lua", "-d", out, "--compressed", "--json"])
        #expect(run.status == 1)
        let failed = try #require(run.events("failed").first, "\(run.stdout)")
        #expect(failed["kind"] as? String == "size", "\(failed)")
        #expect(try server.requests(matching: "/gzip-zeros").count == 1, "never retried")
        #expect(listing(out).filter { !$0.hasPrefix(".") && !$0.hasSuffix(".part") }.isEmpty, "no file: \(listing(out))")
    }

    @Test func aFiftyMegabyteHeaderIsTheHeadLimitError() async throws {
        let run = try await DLPipeRun.run(["get", server.url("/one-huge-header?mb=50"), "-d", out, "--json"])
        #expect(run.status == 1)
        let failed = try #require(run.events("failed").first, "\(run.stdout)")
        #expect(failed["kind"] as? String == "http", "\(failed)")
        #expect(failed["message"] as? String == "the response headers exceed 256 KiB", "\(failed)")
        #expect(run.events("retrying").isEmpty)
        #expect(try server.requests(matching: "/one-huge-header").count == 1)
    }
}
