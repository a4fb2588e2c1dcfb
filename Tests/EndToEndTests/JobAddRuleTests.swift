import Foundation
import Testing

/// A job's `dl.add` keeps its own rule (SPEC 6) while the library's `add`
/// deduplicates only open downloads: a URL and target the job already added
/// in this run give the first id back, even after that download ended.
@Suite struct JobAddRuleTests {
    @Test func aJobAddingAnEndedURLAgainGetsTheFirstId() async throws {
        let server = try FaultServer()
        let job = try LuaJob()
        let out = try TempDir.make("jobrule")
        try server.put("a.txt", bytes: Array("alpha".utf8))
        try server.put("b.txt", bytes: Array("beta".utf8))
        try job.write("job.lua", """
            local a = dl.add(dl.var.base .. "/a.txt")
            dl.on("finished", function(d, f)
              if d.id == a then
                -- a.txt has ended: the job still gets its first id back
                dl.log("again", dl.add(dl.var.base .. "/a.txt"), a)
                local b = dl.add(dl.var.base .. "/b.txt")
                dl.log("b", b, dl.add(dl.var.base .. "/b.txt"))
              else
                dl.log("after b", dl.add(dl.var.base .. "/a.txt"), dl.add(dl.var.base .. "/b.txt"))
              end
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.logLines(containing: "again").first?.hasSuffix("again\t1\t1") == true, "\(run.stderr)")
        #expect(run.logLines(containing: " b\t").first?.hasSuffix(" b\t2\t2") == true, "\(run.stderr)")
        #expect(run.logLines(containing: "after b").first?.hasSuffix("after b\t1\t2") == true, "\(run.stderr)")
        #expect(try server.requests(matching: "/files/a.txt").count == 1)
        #expect(try server.requests(matching: "/files/b.txt").count == 1)
        #expect(listing(out) == ["a.txt", "b.txt"])
    }

    /// `dlpipe get` fetches a URL given twice once, however long its list.
    @Test func getFetchesARepeatedURLOnce() async throws {
        let server = try FaultServer()
        let out = try TempDir.make("getrepeat")
        try server.put("a.txt", bytes: Array("alpha".utf8))
        let url = server.url("/files/a.txt")
        let list = out + "/../list-\(server.port).txt"
        try "\(url)\n\(url)\n".write(toFile: list, atomically: true, encoding: .utf8)
        let run = try await DLPipeRun.run(["get", "-i", list, "-d", out, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try server.requests(matching: "/files/a.txt").count == 1)
        #expect(listing(out) == ["a.txt"])
    }
}
