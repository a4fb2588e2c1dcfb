import Foundation
import Testing

/// `dlpipe run --record DIR` then `--replay DIR` (issue 14): the same job with
/// the server gone gives the same files and the same handler output, into an
/// output directory of its own, as often as it is run.
@Suite struct RecordReplayTests {
    let job: LuaJob
    let recording: String

    init() throws {
        job = try LuaJob()
        recording = try TempDir.make("recording") + "/rec"
        // A crawl: the page's links, a redirect hop, a 404, a response skipped.
        try job.write("job.lua", """
            dl.config{ dir = "job-dir", retries = 0 }
            dl.add(dl.var.base .. "/files/index.html")
            dl.on("response", function(d, r)
              if r.type == "application/pdf" then return dl.skip("no pdf") end
            end)
            dl.on("finished", function(d, f)
              dl.log("finished", d.name, f.bytes, f.type, f.sha256)
              if f.type == "text/html" then
                for href in dl.read(f.path):gmatch('href="([^"]+)"') do dl.add(dl.url.resolve(d.url, href)) end
              end
            end)
            dl.on("failed", function(d, e) dl.log("failed", d.url, e.kind, e.status) end)
            """)
    }

    func putSite(_ server: FaultServer) throws {
        try server.put("index.html", bytes: Array("""
            <a href="a.png">a</a> <a href="/redirect/1/files/b.png">b</a>
            <a href="gone.png">gone</a> <a href="c.pdf">c</a>
            """.utf8))
        try server.put("a.png", randomBytes: 200_000, seed: 1)
        try server.put("b.png", randomBytes: 3_000, seed: 2)
        try server.put("c.pdf", randomBytes: 50_000, seed: 3)
    }

    /// The handler lines of a run, without the file paths that differ by directory.
    static func handlerLines(_ run: DLPipeRun) -> [String] {
        run.stderr.split(separator: "\n").filter { $0.hasPrefix("[") }.map(String.init).sorted()
    }

    static func files(_ directory: String) -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for name in listing(directory) { out[name] = bytes(at: directory + "/" + name) }
        return out
    }

    func recordAndStop(tls: TestCertificate? = nil) async throws -> (run: DLPipeRun, base: String, out: String) {
        let server = try FaultServer(tls: tls)
        try putSite(server)
        let out = try TempDir.make("recorded-run")
        let trust = tls.map { ["--cacert", $0.certificate] } ?? []
        let base = server.url("")
        let run = try await DLPipeRun.run(
            ["run", job.directory + "/job.lua", "-d", out, "--record", recording, "--var", "base=\(base)", "--progress", "none"] + trust)
        #expect(run.status == 1, "the 404 fails: \(run.stderr)")
        #expect(try server.requests(matching: "/files/").count >= 5)
        return (run, base, out)
    }

    @Test func aReplayWithTheServerGoneGivesTheSameFilesAndHandlerOutput() async throws {
        let (recorded, base, recordedOut) = try await recordAndStop()
        #expect(Set(listing(recordedOut)) == ["index.html", "a.png", "b.png"])
        #expect(Self.handlerLines(recorded).count == 4, "\(recorded.stderr)")
        // The server is gone (deinit): only the recording answers.
        for round in 1...2 {
            let out = try TempDir.make("replay")
            let replay = try await DLPipeRun.run(
                ["run", job.directory + "/job.lua", "-d", out, "--replay", recording, "--var", "base=\(base)", "--progress", "none"])
            #expect(replay.status == 1, "round \(round): \(replay.stderr)")
            #expect(replay.stderr.hasPrefix("dlpipe: replaying \(recording) into \(out)\n"), "\(replay.stderr)")
            #expect(Self.files(out) == Self.files(recordedOut), "round \(round)")
            #expect(Self.handlerLines(replay) == Self.handlerLines(recorded), "round \(round)")
        }
    }

    @Test func withoutDirTheReplayGoesToATemporaryDirectoryNeverTheJobs() async throws {
        let (recorded, base, recordedOut) = try await recordAndStop()
        _ = recorded
        let cwd = try TempDir.make("replay-cwd")
        let replay = try await DLPipeRun.run(
            ["run", job.directory + "/job.lua", "--replay", recording, "--var", "base=\(base)", "--progress", "none", "-q"],
            under: ["/usr/bin/env", "-C", cwd], within: 60)
        let first = replay.stderr.split(separator: "\n").first.map(String.init) ?? ""
        let out = try #require(first.firstMatch(of: /^dlpipe: replaying .* into (.*)$/)?.output.1).description
        #expect(out != cwd + "/job-dir" && !out.hasPrefix(cwd), "\(out)")
        #expect(Self.files(out) == Self.files(recordedOut))
        #expect(listing(cwd).isEmpty, "the job's dl.config dir is not touched")
        // --state would be the real state: refused.
        let state = try await DLPipeRun.run(["run", job.directory + "/job.lua", "--replay", recording, "--state", cwd + "/s.db"])
        #expect(state.status == 2)
        #expect(state.stderr.contains("--replay keeps its state in its own output directory"), "\(state.stderr)")
    }

    @Test func aResponseTheRecordingLacksIsANetworkFailure() async throws {
        let (_, base, _) = try await recordAndStop()
        try job.write("other.lua", "dl.add(dl.var.base .. '/files/never.bin')\n")
        let out = try TempDir.make("replay-missing")
        let replay = try await DLPipeRun.run(
            ["run", job.directory + "/other.lua", "-d", out, "--replay", recording, "--var", "base=\(base)", "--retries", "0", "--json"])
        #expect(replay.status == 1)
        let failed = try #require(replay.events("failed").first)
        #expect(failed["kind"] as? String == "network")
        #expect((failed["message"] as? String ?? "").hasPrefix("--replay: the recording \(recording) has no response for \(base)/files/never.bin"), "\(failed)")
    }

    /// A size refusal is decided from the headers, on the body's first
    /// bytes: the replay offers them too, and fails as `size` at once, as
    /// the recording did (it waited out --timeout and failed as `timeout`).
    @Test func aMaxSizeRefusalIsReplayed() async throws {
        let server = try FaultServer()
        try server.put("big.bin", randomBytes: 200_000)
        try job.write("sized.lua", """
            dl.config{ retries = 0 }
            dl.add{ url = dl.var.base .. "/files/big.bin", max_size = 1000 }
            """)
        let base = server.url("")
        let recorded = try await DLPipeRun.run(
            ["run", job.directory + "/sized.lua", "-d", try TempDir.make("sized-run"), "--record", recording,
             "--var", "base=\(base)", "--json", "--timeout", "8"])
        #expect(recorded.events("failed").first?["kind"] as? String == "size", "\(recorded.stdout)")
        let replay = try await DLPipeRun.run(
            ["run", job.directory + "/sized.lua", "-d", try TempDir.make("sized-replay"), "--replay", recording,
             "--var", "base=\(base)", "--json", "--timeout", "8"])
        #expect(replay.status == 1)
        let failed = try #require(replay.events("failed").first, "\(replay.stdout)")
        #expect(failed["kind"] as? String == "size", "\(failed)")
        #expect(replay.seconds < 8, "no wait for a body: \(replay.seconds) s")
    }

    /// Recordings are kept as fixtures: no password of a URL, no cookie and
    /// no Authorization value in them, and only their owner reads them. The
    /// replay still finds each response, by the redacted URL.
    @Test func aRecordingKeepsNoCredentials() async throws {
        let server = try FaultServer()
        try server.put("a.txt", bytes: Array("alpha".utf8))
        let withUser = "http://alice:hunter2@127.0.0.1:\(server.port)/files/a.txt"
        try job.write("secrets.lua", """
            dl.config{ retries = 0 }
            dl.add("\(withUser)")
            dl.add{ url = dl.var.base .. "/login?to=/members/a.txt", name = "member.txt" }
            dl.add{ url = dl.var.base .. "/set-cookies", headers = { Authorization = "Bearer t0ken" } }
            """)
        let base = server.url("")
        let recordedOut = try TempDir.make("secrets-run")
        let recorded = try await DLPipeRun.run(
            ["run", job.directory + "/secrets.lua", "-d", recordedOut, "--record", recording, "--var", "base=\(base)",
             "-c", try TempDir.make("jar") + "/cookies.txt"])
        #expect(recorded.status == 0, "\(recorded.stderr)")
        var folder = stat()
        #expect(stat(recording, &folder) == 0 && folder.st_mode & 0o777 == 0o700)
        let names = listing(recording)
        #expect(names.contains("responses.tsv") && names.count > 4, "\(names)")
        for name in names {
            var file = stat()
            #expect(stat(recording + "/" + name, &file) == 0 && file.st_mode & 0o777 == 0o600, "\(name)")
            let text = String(decoding: bytes(at: recording + "/" + name), as: UTF8.self)
            for secret in ["hunter2", "s3cret", "t0ken", "Set-Cookie", "a=1"] {
                #expect(!text.contains(secret), "\(name) holds \(secret): \(text)")
            }
        }
        let index = String(decoding: bytes(at: recording + "/responses.tsv"), as: UTF8.self)
        #expect(index.contains("\thttp://***@127.0.0.1:\(server.port)/files/a.txt\n"), "\(index)")
        let out = try TempDir.make("secrets-replay")
        let replay = try await DLPipeRun.run(
            ["run", job.directory + "/secrets.lua", "-d", out, "--replay", recording, "--var", "base=\(base)",
             "-c", try TempDir.make("jar") + "/cookies.txt"])
        #expect(replay.status == 0, "\(replay.stderr)")
        #expect(Self.files(out) == Self.files(recordedOut))
    }

    @Test func httpsIsReplayedWithoutTLS() async throws {
        let certificate = try TestCertificate.make()
        let (recorded, base, recordedOut) = try await recordAndStop(tls: certificate)
        #expect(base.hasPrefix("https://"))
        let out = try TempDir.make("replay-https")
        let replay = try await DLPipeRun.run(
            ["run", job.directory + "/job.lua", "-d", out, "--replay", recording, "--var", "base=\(base)", "--progress", "none"])
        #expect(Self.files(out) == Self.files(recordedOut))
        #expect(Self.handlerLines(replay) == Self.handlerLines(recorded))
    }

    @Test func badFoldersAreClearErrors() async throws {
        let full = try TempDir.make("record-full")
        try Data("x".utf8).write(to: URL(fileURLWithPath: full + "/x"))
        let record = try await DLPipeRun.run(["run", job.directory + "/job.lua", "--record", full, "--var", "base=http://127.0.0.1:1"])
        #expect(record.status == 2)
        #expect(record.stderr.contains("--record: \(full) is not empty"), "\(record.stderr)")
        let replay = try await DLPipeRun.run(["run", job.directory + "/job.lua", "--replay", full, "--var", "base=http://127.0.0.1:1"])
        #expect(replay.status == 2)
        #expect(replay.stderr.contains("holds no recording"), "\(replay.stderr)")
        let both = try await DLPipeRun.run(["run", job.directory + "/job.lua", "--replay", full, "--record", full])
        #expect(both.status == 2)
        #expect(both.stderr.contains("--record and --replay: one at a time"), "\(both.stderr)")
    }
}
