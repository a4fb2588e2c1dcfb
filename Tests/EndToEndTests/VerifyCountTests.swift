import Foundation
import Testing

/// `--verify` in the run's summary: how many kept files were hashed again
/// and compared (`verified`), and how many of them no longer matched and
/// were replaced (`replaced`), in the summary line, the JSON `done` event and
/// `done`'s `s`.
@Suite struct VerifyCountTests {
    /// The same bytes with one flipped, keeping the file's size and time.
    private func rot(_ path: String) throws {
        let time = try #require(FileTimes.modified(path))
        var data = bytes(at: path)
        data[10] ^= 0x01
        try Data(data).write(to: URL(fileURLWithPath: path))
        try FileTimes.set(path, seconds: Int(time.tv_sec), nanoseconds: Int(time.tv_nsec))
    }

    @Test func theSummaryCountsTheFilesVerifiedAndTheOnesReplaced() async throws {
        let server = try FaultServer()
        try server.put("a.bin", randomBytes: 5000, seed: 1)
        try server.put("b.bin", randomBytes: 5000, seed: 2)
        let out = try TempDir.make("verify-count")
        let job = try LuaJob()
        try job.write("job.lua", """
            dl.config{ verify = true }
            dl.add("\(server.url("/files/a.bin"))")
            dl.add("\(server.url("/files/b.bin"))")
            dl.on("done", function(s) dl.warn("verified " .. s.verified .. ", replaced " .. s.replaced) end)
            """)
        let first = try await job.run("job.lua", out: out)
        #expect(first.status == 0, "\(first.stderr)")
        let placed = try #require(first.events("done").last)
        #expect(placed["verified"] as? Int == 0 && placed["replaced"] as? Int == 0, "nothing kept yet: \(placed)")

        try rot(out + "/a.bin")
        let second = try await job.run("job.lua", out: out)
        #expect(second.status == 0, "\(second.stderr)")
        let done = try #require(second.events("done").last)
        #expect(done["verified"] as? Int == 2 && done["replaced"] as? Int == 1, "\(done)")
        #expect(done["finished"] as? Int == 1 && done["unchanged"] as? Int == 1, "the replaced file is finished: \(done)")
        let said = second.events("warning").compactMap { $0["message"] as? String }
        #expect(said.contains("verified 2, replaced 1"), "done's s: \(said)")

        try rot(out + "/b.bin")
        let lines = try await DLPipeRun.run(["run", job.directory + "/job.lua", "-d", out])
        #expect(lines.stderr.contains("dlpipe: 1 finished, 1 unchanged, 2 verified (1 replaced) ("), "\(lines.stderr)")
        let clean = try await DLPipeRun.run(["run", job.directory + "/job.lua", "-d", out])
        #expect(clean.stderr.contains("dlpipe: 0 finished, 2 unchanged, 2 verified ("), "\(clean.stderr)")
    }
}
