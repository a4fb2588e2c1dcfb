import Foundation
import Testing
import TestSupport

/// `--compressed` against nginx with gzip on (issue 18): text arrives gzipped
/// and is stored decoded; compressed resources are stored as the server's
/// bytes; a resume after a kill asks for identity and appends.
@Suite struct CompressedTests {
    let nginx: Nginx
    let dir = Nginx.uniquePath()
    let out: String

    init() throws {
        nginx = try Nginx.shared()
        out = try TempDir.make("compressed")
    }

    /// Text that gzip shrinks (lines of words), `count` bytes.
    private func text(_ count: Int, seed: UInt64 = 7) -> [UInt8] {
        let words = ["alpha ", "beta ", "gamma ", "delta ", "epsilon\n", "zeta ", "eta ", "theta\n"]
        var generator = SplitMix64(seed: seed)
        var bytes: [UInt8] = []
        while bytes.count < count { bytes += Array(words[Int(generator.next() % 8)].utf8) }
        return Array(bytes.prefix(count))
    }

    @Test func textArrivesCompressedAndIsStoredDecoded() async throws {
        let data = try nginx.put(dir + "/notes.txt", bytes: text(200_000))
        let run = try await DLPipeRun.run(
            ["get", nginx.url(dir + "/notes.txt"), "-d", out, "--cacert", nginx.ca.certificate, "--compressed", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/notes.txt", data))
        let logged = try #require(nginx.requests(matching: dir + "/notes.txt").last)
        #expect(logged.contentEncoding == "gzip", "\(logged)")
        #expect(logged.sent > 0 && logged.sent < data.count / 3, "\(logged.sent) bytes on the wire for \(data.count)")
        #expect(run.events("finished").first?["bytes"] as? Int == data.count, "\(run.stdout)")
        // Without the option nothing is asked for: the whole text travels.
        let plain = try await DLPipeRun.run(
            ["get", nginx.url(dir + "/notes.txt"), "-d", out, "--cacert", nginx.ca.certificate, "-o", "plain.txt"])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(nginx.requests(matching: dir + "/notes.txt").last?.sent == data.count)
    }

    @Test func aJobTurnsItOnWithDlConfig() async throws {
        let data = try nginx.put(dir + "/job.txt", bytes: text(60_000, seed: 4))
        // Dated 2001: with mtime = true the file would get this date.
        var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, nginx.root() + dir + "/job.txt", &times, 0) == 0)
        let job = try LuaJob()
        try job.write("job.lua", """
            dl.config{ compressed = true, mtime = false }
            dl.add("\(nginx.url(dir + "/job.txt"))")
            """)
        let before = Int(Date().timeIntervalSince1970) - 1
        let run = try await DLPipeRun.run(
            ["run", job.directory + "/job.lua", "-d", out, "--cacert", nginx.ca.certificate, "--no-hooks"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/job.txt", data))
        #expect(nginx.requests(matching: dir + "/job.txt").last?.contentEncoding == "gzip")
        var info = stat()
        #expect(stat(out + "/job.txt", &info) == 0 && info.st_mtim.tv_sec >= before, "mtime = false keeps the time of writing")
        _ = try job.write("bad.lua", "dl.config{ compressed = \"yes\" }")
        let refused = try await DLPipeRun.run(["run", job.directory + "/bad.lua", "-d", out, "--no-hooks"])
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("compressed"), "\(refused.stderr)")
    }

    @Test func aChecksumIsOfTheStoredBytes() async throws {
        let data = try nginx.put(dir + "/sum.txt", bytes: text(50_000, seed: 3))
        let digest = sha256Hex(data)
        let run = try await DLPipeRun.run(
            ["get", nginx.url(dir + "/sum.txt"), "-d", out, "--cacert", nginx.ca.certificate, "--compressed",
             "--sha256", digest])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(nginx.requests(matching: dir + "/sum.txt").last?.contentEncoding == "gzip")
        #expect(sameBytes(out + "/sum.txt", data))
    }

    @Test func aGzipFileIsStoredAsTheServersBytes() async throws {
        // Bytes that are text: were they decoded or re-encoded, they would differ.
        let data = try nginx.put(dir + "/logs.txt.gz", bytes: text(30_000, seed: 5))
        let run = try await DLPipeRun.run(
            ["get", nginx.url(dir + "/logs.txt.gz"), "-d", out, "--cacert", nginx.ca.certificate, "--compressed"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/logs.txt.gz", data))
        #expect(nginx.requests(matching: dir + "/logs.txt.gz").last?.acceptEncoding == "identity")
    }

    /// nginx gzips `application/x-tar` here: an archive's media type makes
    /// dlpipe ask again for the server's own bytes.
    @Test func anEncodedArchiveIsAskedForAgainAsItIs() async throws {
        let data = try nginx.put(dir + "/bundle.tar", bytes: text(40_000, seed: 9))
        let run = try await DLPipeRun.run(
            ["get", nginx.url(dir + "/bundle.tar"), "-d", out, "--cacert", nginx.ca.certificate, "--compressed"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/bundle.tar", data))
        let logged = nginx.requests(matching: dir + "/bundle.tar")
        #expect(logged.map(\.contentEncoding) == ["gzip", ""], "\(logged)")
        #expect(logged.last?.acceptEncoding == "identity")
    }

    @Test func aKilledCompressedDownloadResumesWithIdentity() async throws {
        // Under /slow/ (100 KB/s on the wire): gzipped text, killed once some
        // is on disk; the identity rest takes a few seconds.
        // Hex digits: gzip halves them (words would shrink tenfold and end too soon).
        var generator = SplitMix64(seed: 11)
        let hex = (0..<400_000).map { $0 % 65 == 64 ? UInt8(ascii: "\n") : Array("0123456789abcdef".utf8)[Int(generator.next() % 16)] }
        let data = try nginx.put("slow" + dir + "/big.txt", bytes: hex)
        let url = nginx.url("/slow" + dir + "/big.txt")
        let process = try Subprocess(Paths.binary, [
            "get", url, "-d", out, "--cacert", nginx.ca.certificate, "--compressed", "--json",
        ])
        // Some decoded bytes are on disk before the kill. Watched and killed on
        // one thread: a hop back to the test pool could come after the body's end.
        let part = out + "/big.txt.part"
        let sawProgress = await offThePool { () -> Bool in
            let saw = process.waitForLine(containing: "\"progress\"")
            let deadline = Date().addingTimeInterval(20)
            while (try? FileManager.default.attributesOfItem(atPath: part)[.size] as? Int) ?? 0 < 50_000, Date() < deadline {
                usleep(20_000)
            }
            process.signal(SIGKILL)
            return saw
        }
        #expect(sawProgress)
        #expect(await offThePool { process.waitForExit() } == 128 + SIGKILL)
        let kept = (try? FileManager.default.attributesOfItem(atPath: part)[.size] as? Int) ?? 0
        #expect(kept > 0 && kept < data.count, "\(kept)")
        let resumed = try await DLPipeRun.run(
            ["get", url, "-d", out, "--cacert", nginx.ca.certificate, "--compressed"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(sameBytes(out + "/big.txt", data))
        let last = try #require(nginx.requests(matching: "/slow" + dir + "/big.txt").last)
        #expect(last.status == 206 && last.acceptEncoding == "identity", "\(last)")
        #expect(last.sent < data.count, "only the rest was sent: \(last.sent)")
    }
}
