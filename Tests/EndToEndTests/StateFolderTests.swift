import Foundation
import Testing

/// `.dlpipe/` (the state and the lock) is outside what scripts may read, write or name
/// (issue 19): `dl.read` refuses it (ConfinedReadTests.theStateFolderIsNeverRead), and so do
/// `dl.add`'s `dir`/`name`, `d.dir`/`d.name` in a handler, and a symlink that leads there.
@Suite struct StateFolderTests {
    @Test func noDownloadMayNameTheStateFolder() async throws {
        let server = try FaultServer()
        let job = try LuaJob()
        let out = try TempDir.make("statefolder")
        try server.put("a.txt", bytes: Array("a".utf8))
        try server.put("b.txt", bytes: Array("b".utf8))
        try server.put("c.txt", bytes: Array("c".utf8))
        try FileManager.default.createDirectory(atPath: out + "/.dlpipe", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: out + "/state", withDestinationPath: out + "/.dlpipe")

        try job.write("top.lua", "dl.add{ url = dl.var.base .. '/a.txt', dir = '.dlpipe' }")
        let top = try await DLPipeRun.run(["run", job.directory + "/top.lua", "-d", out, "--var", "base=\(server.url("/files"))"])
        #expect(top.status == 2, "\(top.stderr)")
        #expect(top.stderr.contains("top.lua:1: dl.add: path \".dlpipe/x\" is inside .dlpipe/"), "\(top.stderr)")

        try job.write("job.lua", """
            dl.add(dl.var.base .. "/a.txt")
            dl.add(dl.var.base .. "/b.txt")
            dl.add(dl.var.base .. "/c.txt")
            dl.on("response", function(d)
              if d.name == "a.txt" then d.dir = ".dlpipe" end
              if d.name == "b.txt" then d.name = ".dlpipe" end
              if d.name == "c.txt" then d.dir = "state" end
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 1, "\(run.stderr)")
        let failed = run.events("failed")
        #expect(failed.count == 3, "\(run.stdout)")
        #expect(failed.allSatisfy { $0["kind"] as? String == "hook" }, "\(failed)")
        let messages = failed.compactMap { $0["message"] as? String }.joined(separator: "\n")
        #expect(messages.contains("path \".dlpipe/a.txt\" is inside .dlpipe/"), "\(messages)")
        #expect(messages.contains("path \".dlpipe\" is inside .dlpipe/"), "\(messages)")
        #expect(messages.contains("reaches .dlpipe/, dlpipe's own state, through"), "\(messages)")
        let inside = try FileManager.default.contentsOfDirectory(atPath: out + "/.dlpipe").sorted()
        #expect(!inside.contains { $0.hasPrefix("a.txt") || $0.hasPrefix("c.txt") }, "\(inside)")
    }
}
