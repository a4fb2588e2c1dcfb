import Foundation
import Testing
import TestSupport

/// `dlpipe get` against the loopback server: the ordinary paths.
@Suite struct GetBasicsTests {
    let server: FaultServer
    let out: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("out")
    }

    @Test func downloadsSeveralFilesByteIdentical() async throws {
        let a = try server.put("a.bin", randomBytes: 300_000, seed: 1)
        let b = try server.put("b.txt", bytes: Array("hello\n".utf8))
        let empty = try server.put("empty.dat", bytes: [])
        let run = try await DLPipeRun.run(
            ["get", server.url("/files/a.bin"), server.url("/files/b.txt"), server.url("/files/empty.dat"),
             "-d", out, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/a.bin", a))
        #expect(sameBytes(out + "/b.txt", b))
        #expect(FileManager.default.fileExists(atPath: out + "/empty.dat"))
        #expect(sameBytes(out + "/empty.dat", empty))
        #expect(listing(out) == ["a.bin", "b.txt", "empty.dat"], "no part files left")
        // Each download: queued, then response, then exactly one terminal event.
        for id in 1...3 {
            let mine = run.events.filter { $0["id"] as? Int == id }.compactMap { $0["event"] as? String }
            #expect(mine.first == "queued")
            #expect(mine.filter { ["finished", "failed", "skipped", "cancelled"].contains($0) } == ["finished"])
            #expect(mine.last == "finished")
            #expect(mine.firstIndex(of: "response")! < mine.firstIndex(of: "finished")!)
        }
        let done = run.events("done")
        #expect(done.count == 1 && done[0]["finished"] as? Int == 3)
    }

    /// As curl and wget: `host:port/path` on the command line or in a list is http.
    @Test func aURLWithoutASchemeIsHTTP() async throws {
        let data = try server.put("plain.txt", bytes: Array("plain\n".utf8))
        let bare = server.url("/files/plain.txt").replacingOccurrences(of: "http://", with: "")
        try #require(!bare.contains("://"))
        let run = try await DLPipeRun.run(["get", bare, "-d", out, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/plain.txt", data))
        #expect(run.events("finished").first?["url"] as? String == server.url("/files/plain.txt"))
    }

    @Test func outputNameAndDirectoryAreCreated() async throws {
        let a = try server.put("a.bin", randomBytes: 1000)
        let run = try await DLPipeRun.run(["get", server.url("/files/a.bin"), "-o", "renamed.bin", "-d", out + "/deep/er"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/deep/er/renamed.bin", a))
    }

    @Test func urlListFromFileAndStdin() async throws {
        let a = try server.put("a.txt", bytes: Array("a".utf8))
        let b = try server.put("b.txt", bytes: Array("b".utf8))
        let list = out + "/../list-\(server.port).txt"
        try "# a comment\n\n\(server.url("/files/a.txt"))\n".write(toFile: list, atomically: true, encoding: .utf8)
        let stdinList = out + "/../stdin-\(server.port).txt"
        try "\(server.url("/files/b.txt"))\n".write(toFile: stdinList, atomically: true, encoding: .utf8)
        let run = try await DLPipeRun.run(["get", "-i", list, "-i", "-", "-d", out], stdin: stdinList)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/a.txt", a))
        #expect(sameBytes(out + "/b.txt", b))
    }

    @Test func existingFileIsNeverClobbered() async throws {
        let a = try server.put("report.pdf", randomBytes: 5000)
        let mine = Array("my own file".utf8)
        try TestFiles.create(out + "/report.pdf", Data(mine))
        let run = try await DLPipeRun.run(["get", server.url("/files/report.pdf"), "-d", out])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/report.pdf", mine))
        #expect(sameBytes(out + "/report.1.pdf", a))
    }

    @Test func serverSuggestedNamesAreSanitisedInsideTheDirectory() async throws {
        try server.put("x.bin", bytes: Array("x".utf8))
        let cases: [(disposition: String, expected: String)] = [
            ("attachment; filename=\"../../etc/passwd\"", "passwd"),
            ("attachment; filename*=UTF-8''..%2F..%2Fescape.txt", "escape.txt"),
            ("attachment; filename=\".hidden\"", "hidden"),
            ("attachment; filename=\"a\u{1b}[31mred.txt\"", "a[31mred.txt"),
            ("attachment; filename=\"..\"", "x.bin"),
        ]
        for (disposition, expected) in cases {
            let dir = try TempDir.make("cd")
            let encoded = disposition.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let run = try await DLPipeRun.run(["get", server.url("/files/x.bin?cd=\(encoded)"), "-d", dir])
            #expect(run.status == 0, "\(disposition): \(run.stderr)")
            #expect(listing(dir) == [expected], "\(disposition)")
            #expect(listing(dir + "/..").allSatisfy { !$0.contains("escape") && $0 != "passwd" })
        }
    }

    @Test func checksumVerifiedWhileStreaming() async throws {
        let data = try server.put("c.bin", randomBytes: 100_000)
        let good = sha256Hex(data)
        let ok = try await DLPipeRun.run(["get", server.url("/files/c.bin"), "-d", out, "--sha256", good, "--json"])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.events("finished").first?["sha256"] as? String == good)
        let bad = String(repeating: "0", count: 64)
        let badDir = try TempDir.make("bad")
        let failed = try await DLPipeRun.run(["get", server.url("/files/c.bin"), "-d", badDir, "--sha256", bad, "--json"])
        #expect(failed.status == 1)
        #expect(failed.events("failed").first?["kind"] as? String == "checksum")
        #expect(listing(badDir).isEmpty, "a checksum failure leaves no file")
    }

    @Test func plainLinesWithoutEscapeCodes() async throws {
        try server.put("a.txt", bytes: Array("a".utf8))
        let run = try await DLPipeRun.run(["get", server.url("/files/a.txt"), server.url("/files/missing"), "-d", out])
        #expect(run.status == 1)
        #expect(!run.stderr.contains("\u{1b}"))
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("finished ") }.count == 1)
        #expect(lines.filter { $0.hasPrefix("failed ") && $0.contains("404") }.count == 1)
        #expect(run.stdout.isEmpty)
    }

    @Test func progressBarsRedrawInPlace() async throws {
        let data = try server.put("slow.bin", randomBytes: 300_000)
        let run = try await DLPipeRun.run(["get", server.url("/files/slow.bin?throttle=400000"), "--progress", "bars", "-d", out])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/slow.bin", data))
        #expect(run.stderr.contains("slow.bin"))
        #expect(run.stderr.contains("total: "), "a total line under the bars")
        #expect(run.stderr.contains("\u{1b}[2F\u{1b}[J"), "redrawn in place: up over one bar and the total, clear")
        #expect(!run.stderr.contains("\u{1b}[32m"), "no colours with NO_COLOR set")
        #expect(run.stderr.hasSuffix("\n"))
    }

    @Test func quietPrintsOnlyFailures() async throws {
        try server.put("a.txt", bytes: Array("a".utf8))
        let run = try await DLPipeRun.run(["get", server.url("/files/a.txt"), "-q", "-d", out])
        #expect(run.status == 0)
        #expect(run.stderr.isEmpty && run.stdout.isEmpty)
    }

    @Test func rateLimitedDownloadCompletes() async throws {
        let data = try server.put("r.bin", randomBytes: 64 * 1024)
        let run = try await DLPipeRun.run(["get", server.url("/files/r.bin"), "--rate", "256K", "-d", out])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/r.bin", data))
    }
}

/// The hex SHA-256 of bytes, through the system's sha256sum (independent of dlpipe's).
func sha256Hex(_ data: [UInt8]) -> String {
    let path = NSTemporaryDirectory() + "dlpipe-sha-\(UUID().uuidString)"
    try! TestFiles.create(path, Data(data))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let process = try! Subprocess("/usr/bin/sha256sum", [path])
    return String(process.finish().stdout.prefix(64))
}
