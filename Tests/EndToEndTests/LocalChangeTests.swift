import Foundation
import Testing

/// A file a run placed, then changed by the user (issue 18): a re-run never
/// replaces the change silently. Unchanged: 304, kept. Changed and the
/// server's version the same: 304, the user's file kept as it is. Changed
/// and a new version: beside it (`name.1.ext`) with a warning, or over it
/// with `--overwrite`. Deleted: fetched again.
@Suite struct LocalChangeTests {
    let server: FaultServer
    let out: String
    let url: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("local-change")
        url = server.url("/files/f.bin")
    }

    private func get(_ extra: [String] = []) async throws -> DLPipeRun {
        try await DLPipeRun.run(["get", url, "-d", out, "--json"] + extra)
    }

    /// The headers of the last request for f.bin.
    private func lastRequest() throws -> [String: String] {
        try server.requests(matching: "/files/f.bin").last?["headers"] as? [String: String] ?? [:]
    }

    /// A first run that places f.bin; its bytes.
    private func firstRun() async throws -> [UInt8] {
        let data = try server.put("f.bin", randomBytes: 20_000)
        let first = try await get()
        try #require(first.status == 0, "\(first.stderr)")
        return data
    }

    @Test func anUnchangedFileIsAskedAboutAndKept() async throws {
        let data = try await firstRun()
        let inode = FileTimes.inode(out + "/f.bin")
        let run = try await get()
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try lastRequest()["if-none-match"] != nil)
        #expect(run.events("finished").first?["unchanged"] as? Bool == true)
        #expect(sameBytes(out + "/f.bin", data) && FileTimes.inode(out + "/f.bin") == inode)
        #expect(run.events("warning").isEmpty)
    }

    /// Edited in place (another size): kept while the server has nothing new,
    /// a new version goes beside it with a warning, and the run after that
    /// asks about the new file and makes no third copy.
    @Test func anEditedFileIsKeptAndANewVersionGoesBesideIt() async throws {
        _ = try await firstRun()
        let edit = Array("my notes on top of the download\n".utf8)
        try Data(edit).write(to: URL(fileURLWithPath: out + "/f.bin"))
        let same = try await get()
        #expect(same.status == 0, "\(same.stderr)")
        #expect(try lastRequest()["if-none-match"] != nil, "asked about the version placed")
        #expect(same.events("finished").first?["unchanged"] as? Bool == true)
        #expect(sameBytes(out + "/f.bin", edit) && listing(out) == ["f.bin"])
        let v2 = try server.put("f.bin", randomBytes: 25_000, seed: 7)
        let human = try await DLPipeRun.run(["get", url, "-d", out])
        #expect(human.status == 0, "\(human.stderr)")
        #expect(sameBytes(out + "/f.bin", edit), "the user's change is untouched")
        #expect(sameBytes(out + "/f.1.bin", v2))
        #expect(human.stderr.contains("dlpipe: warning: f.bin was changed since dlpipe placed it (its size was 20000 bytes, now \(edit.count)); the new version is f.1.bin"), "\(human.stderr)")
        let settled = try await get()
        #expect(settled.status == 0, "\(settled.stderr)")
        #expect(settled.events("finished").first?["unchanged"] as? Bool == true)
        #expect(listing(out) == ["f.1.bin", "f.bin"], "no third copy")
        #expect(settled.events("warning").isEmpty)
    }

    /// The same size, other bytes, another time (what an editor that keeps
    /// the length leaves): told apart by the time; the warning comes as a
    /// JSON `warning` event under --json.
    @Test func aChangeOfTheSameSizeIsToldByItsTime() async throws {
        let data = try await firstRun()
        var edit = data
        edit[0] ^= 0xFF
        try Data(edit).write(to: URL(fileURLWithPath: out + "/f.bin"))
        try FileTimes.set(out + "/f.bin", seconds: 1_234_567_890)
        let v2 = try server.put("f.bin", randomBytes: 20_000, seed: 8)
        let run = try await get()
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/f.bin", edit) && sameBytes(out + "/f.1.bin", v2))
        let warning = run.events("warning").first
        #expect((warning?["message"] as? String)?.contains("its modification time changed") == true, "\(run.stdout)")
        #expect(warning?["id"] as? Int == run.events("finished").first?["id"] as? Int)
    }

    /// `--overwrite` replaces a changed file: with the new version, and with
    /// the server's unchanged one too (no conditional request: the state's
    /// validators do not describe the changed file).
    @Test func overwriteReplacesAChangedFile() async throws {
        let data = try await firstRun()
        try Data("edited".utf8).write(to: URL(fileURLWithPath: out + "/f.bin"))
        let restored = try await get(["--overwrite"])
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(try lastRequest()["if-none-match"] == nil)
        #expect(sameBytes(out + "/f.bin", data) && listing(out) == ["f.bin"])
        #expect(restored.events("warning").isEmpty)
        try Data("edited again".utf8).write(to: URL(fileURLWithPath: out + "/f.bin"))
        let v2 = try server.put("f.bin", randomBytes: 30_000, seed: 9)
        let replaced = try await get(["--overwrite"])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(sameBytes(out + "/f.bin", v2) && listing(out) == ["f.bin"])
    }

    @Test func aDeletedFileIsFetchedAgain() async throws {
        let data = try await firstRun()
        try FileManager.default.removeItem(atPath: out + "/f.bin")
        let run = try await get()
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try lastRequest()["if-none-match"] == nil, "nothing on disk to ask about")
        #expect(run.events("finished").first?["unchanged"] as? Bool == false)
        #expect(sameBytes(out + "/f.bin", data) && listing(out) == ["f.bin"])
    }
}
