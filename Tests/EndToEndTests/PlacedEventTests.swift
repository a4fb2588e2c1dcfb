import Foundation
import Testing

/// `placed`: after every `finished` handler (the job's, then the drop-in
/// hooks'), with the file where it ended up, for an index that a sorting
/// hook would otherwise leave pointing at the old path.
@Suite struct PlacedEventTests {
    let server: FaultServer
    let out: String
    let job: LuaJob

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("placed")
        job = try LuaJob()
        _ = try server.put("a.bin", randomBytes: 2_000)
    }

    @Test func placedSeesThePathAfterAHookMovedTheFile() async throws {
        try job.write("job.lua", """
            dl.add("\(server.url("/files/a.bin"))")
            dl.on("finished", function(d, f) dl.log("1 job finished", f.path) end)
            dl.on("placed", function(d, f)
              dl.log("3 job placed", f.path, d.path, d.dir, f.bytes, f.sha256, tostring(f.unchanged))
            end)
            """)
        try job.write("hooks.d/10-sort.lua", """
            dl.on("finished", function(d, f) d.dir = "sorted"; dl.log("2 hook finished", f.path) end)
            dl.on("placed", function(d, f) dl.log("4 hook placed", f.path) end)
            """)
        let run = try await job.run("job.lua", out: out)
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stderr.split(separator: "\n").map(String.init).filter { $0.contains(" job ") || $0.contains(" hook ") }
        let final = out + "/sorted/a.bin"
        let digest = sha256Hex(bytes(at: final))
        #expect(lines.count == 4, "\(run.stderr)")
        guard lines.count == 4 else { return }
        #expect(lines[0].hasSuffix("1 job finished\t\(out)/a.bin"))
        #expect(lines[1].hasSuffix("2 hook finished\t\(out)/a.bin"))
        #expect(lines[2].hasSuffix("3 job placed\t\(final)\t\(final)\tsorted\t2000\t\(digest)\tfalse"), "\(lines[2])")
        #expect(lines[3].hasSuffix("4 hook placed\t\(final)"))
        #expect(run.events("finished").first?["path"] as? String == final)
    }

    /// A `placed` handler may add downloads: the run waits for it (no `done`
    /// handler here to keep it going). Its error is reported, and the
    /// download stays finished (exit 0).
    @Test func placedMayAddDownloadsAndItsErrorFailsNothing() async throws {
        _ = try server.put("b.bin", randomBytes: 3_000, seed: 2)
        try job.write("job.lua", """
            dl.add("\(server.url("/files/a.bin"))")
            dl.on("placed", function(d, f)
              if d.name == "a.bin" then dl.add("\(server.url("/files/b.bin"))") else error("boom in placed") end
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--no-hooks"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.events("finished").count == 2, "\(run.stdout)")
        #expect(run.events("failed").isEmpty)
        #expect(listing(out) == ["a.bin", "b.bin"])
        #expect(run.stderr.contains("boom in placed"), "\(run.stderr)")
    }

    @Test func aMisspelledFieldOfPlacedIsAnError() async throws {
        try job.write("job.lua", """
            dl.add("\(server.url("/files/a.bin"))")
            dl.on("placed", function(d, f) dl.log(f.pth) end)
            """)
        let run = try await job.run("job.lua", out: out, ["--no-hooks"])
        #expect(run.stderr.contains("f.pth"), "\(run.stderr)")
        #expect(run.stderr.contains("path"), "\(run.stderr)")
    }
}
