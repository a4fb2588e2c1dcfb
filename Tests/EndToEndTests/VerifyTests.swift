import Foundation
import Testing

/// `--verify` (`dl.config{ verify = true }`): a kept file is hashed again
/// before it is asked about. One that matches its SHA-256 is asked with its
/// validators and kept on a 304, checked by validators and content; one that
/// differs (even with its size and time as placed: bit rot) is fetched
/// without validators, although the server would answer 304, and replaces
/// the file with a warning; a file with no known SHA-256 gets one recorded.
@Suite struct VerifyTests {
    let server: FaultServer
    let out: String
    let url: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("verify")
        url = server.url("/files/f.bin")
    }

    private func get(_ extra: [String] = []) async throws -> DLPipeRun {
        try await DLPipeRun.run(["get", url, "-d", out, "--json"] + extra)
    }

    /// The headers of the last request for f.bin.
    private func lastRequest() throws -> [String: String] {
        try server.requests(matching: "/files/f.bin").last?["headers"] as? [String: String] ?? [:]
    }

    /// A first run under --verify that places f.bin; its bytes.
    private func firstRun(_ extra: [String] = ["--verify"]) async throws -> [UInt8] {
        let data = try server.put("f.bin", randomBytes: 30_000)
        let first = try await get(extra)
        try #require(first.status == 0, "\(first.stderr)")
        return data
    }

    /// The same bytes with one flipped, keeping the file's size, inode and time.
    private func rot(_ data: [UInt8]) throws {
        let path = out + "/f.bin"
        let time = try #require(FileTimes.modified(path))
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seek(toOffset: 1000)
        try handle.write(contentsOf: Data([data[1000] ^ 0x01]))
        try handle.close()
        try FileTimes.set(path, seconds: Int(time.tv_sec), nanoseconds: Int(time.tv_nsec))
    }

    @Test func aGoodFileIsKeptCheckedByValidatorsAndContent() async throws {
        let data = try await firstRun()
        let inode = FileTimes.inode(out + "/f.bin")
        let run = try await get(["--verify"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try lastRequest()["if-none-match"] != nil, "asked with its validators")
        let finished = run.events("finished").first
        #expect(finished?["unchanged"] as? Bool == true)
        #expect(finished?["checked"] as? String == "validators and content")
        #expect(finished?["sha256"] as? String == sha256Hex(data))
        #expect(sameBytes(out + "/f.bin", data) && FileTimes.inode(out + "/f.bin") == inode, "not fetched again")
        #expect(run.events("warning").isEmpty)
        let human = try await DLPipeRun.run(["get", url, "-d", out, "--verify"])
        #expect(human.stderr.contains("/f.bin (29.3 KiB on disk, validators and content checked in"), "\(human.stderr)")
        let plain = try await DLPipeRun.run(["get", url, "-d", out])
        #expect(plain.stderr.contains("on disk, validators checked in"), "\(plain.stderr)")
    }

    /// Bit rot: the size and time as placed, so only the bytes tell. Without
    /// --verify the 304 keeps it; with it, the request goes out without
    /// validators and the server's bytes replace it.
    @Test func aCorruptedFileIsFetchedAgainAndReplaced() async throws {
        let data = try await firstRun()
        try rot(data)
        let trusting = try await get()
        #expect(trusting.events("finished").first?["unchanged"] as? Bool == true, "validators alone cannot tell")
        let run = try await get(["--verify"])
        #expect(run.status == 0, "\(run.stderr)")
        let headers = try lastRequest()
        #expect(headers["if-none-match"] == nil && headers["if-modified-since"] == nil, "an unconditional request: \(headers)")
        let finished = run.events("finished").first
        #expect(finished?["unchanged"] as? Bool == false)
        #expect(finished?["sha256"] as? String == sha256Hex(data))
        #expect(sameBytes(out + "/f.bin", data) && listing(out) == ["f.bin"], "replaced, not beside: \(listing(out))")
        let warning = run.events("warning").first?["message"] as? String ?? ""
        #expect(warning.hasPrefix("f.bin did not match (its SHA-256 is ") && warning.hasSuffix("; fetched again and replaced (verify)"), "\(warning)")
        let after = try await get(["--verify"])
        #expect(after.events("finished").first?["checked"] as? String == "validators and content")
    }

    /// A file the user edited (another size and time) goes back to the
    /// server's version under --verify, where it would otherwise be kept.
    @Test func anEditedFileIsReplacedUnderVerify() async throws {
        let data = try await firstRun()
        try Data("my own notes\n".utf8).write(to: URL(fileURLWithPath: out + "/f.bin"))
        let human = try await DLPipeRun.run(["get", url, "-d", out, "--verify"])
        #expect(human.status == 0, "\(human.stderr)")
        #expect(try lastRequest()["if-none-match"] == nil)
        #expect(sameBytes(out + "/f.bin", data) && listing(out) == ["f.bin"])
        #expect(human.stderr.contains("dlpipe: warning: f.bin did not match (its SHA-256 is "), "\(human.stderr)")
    }

    /// A file from a run without --verify has no SHA-256 in the state: it is
    /// trusted on its validators, and the digest found is recorded, so the
    /// run after that catches a change.
    @Test func aFileWithNoKnownDigestGetsOneRecorded() async throws {
        let data = try await firstRun([])
        let first = try await get(["--verify"])
        let finished = first.events("finished").first
        #expect(finished?["unchanged"] as? Bool == true)
        #expect(finished?["checked"] as? String == "validators")
        #expect(finished?["sha256"] as? String == sha256Hex(data))
        try rot(data)
        let run = try await get(["--verify"])
        #expect(run.events("finished").first?["unchanged"] as? Bool == false)
        #expect(sameBytes(out + "/f.bin", data))
    }

    /// Under refresh "never" a good file is kept without a request, checked
    /// by content; a rotted one is fetched and replaced.
    @Test func underRefreshNeverTheContentIsStillChecked() async throws {
        let data = try await firstRun()
        let requests = try server.requests(matching: "/files/f.bin").count
        let kept = try await DLPipeRun.run(["get", url, "-d", out, "--verify", "--refresh", "never"])
        #expect(kept.status == 0, "\(kept.stderr)")
        #expect(kept.stderr.contains("/f.bin (29.3 KiB on disk, content checked in"), "\(kept.stderr)")
        #expect(try server.requests(matching: "/files/f.bin").count == requests, "no request")
        let plain = try await get(["--refresh", "never"])
        #expect(plain.events("finished").first?["checked"] as? String == "nothing")
        try rot(data)
        let run = try await get(["--verify", "--refresh", "never"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try server.requests(matching: "/files/f.bin").count == requests + 1)
        #expect(try lastRequest()["if-none-match"] == nil)
        #expect(run.events("finished").first?["unchanged"] as? Bool == false)
        #expect(sameBytes(out + "/f.bin", data) && listing(out) == ["f.bin"])
        #expect(run.events("warning").count == 1)
    }

    /// The SHA-256 given with the download wins over the state's, and a
    /// missing file is fetched as without --verify.
    @Test func aGivenDigestIsTheOneCheckedAndAMissingFileIsFetched() async throws {
        let data = try await firstRun()
        let good = sha256Hex(data)
        let kept = try await get(["--verify", "--sha256", good])
        #expect(kept.events("finished").first?["checked"] as? String == "validators and content")
        try FileManager.default.removeItem(atPath: out + "/f.bin")
        let run = try await get(["--verify", "--sha256", good])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try lastRequest()["if-none-match"] == nil)
        #expect(run.events("finished").first?["unchanged"] as? Bool == false)
        #expect(sameBytes(out + "/f.bin", data) && run.events("warning").isEmpty)
    }
}
