import Foundation
import Testing

/// `d.depth` and `dl.config{ max_depth = N }`: an add from a handler is one
/// deeper than its parent; past max_depth (or max_downloads) `dl.add` returns
/// nil and warns once, and the download whose handler added it still finishes.
@Suite struct DepthTests {
    @Test func chainedAddsAreOneDeeperAndMaxDepthDropsTheRestWithoutFailing() async throws {
        let server = try FaultServer()
        for i in 0...4 { try server.put("p\(i).txt", randomBytes: 100, seed: UInt64(i + 1)) }
        let out = try TempDir.make("depth")
        let job = try LuaJob()
        try job.write("job.lua", """
            dl.config{ max_depth = 2 }
            local base = "\(server.url("/files/"))"
            dl.add(base .. "p0.txt")
            dl.on("finished", function(d, f)
              dl.log("depth", d.name, d.depth)
              local next = tonumber(d.name:match("p(%d)")) + 1
              local id = dl.add(base .. "p" .. next .. ".txt")
              if id == nil then dl.log("dropped", next) end
            end)
            dl.on("done", function(s) dl.log("top", dl.add(base .. "p0.txt") ~= nil) end)
            """)
        let run = try await job.run("job.lua", out: out)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.events("finished").count == 3, "p0, p1, p2: \(run.stderr)")
        #expect(run.events("failed").isEmpty)
        #expect(run.logLines(containing: "depth\tp0.txt\t0").count == 1, "\(run.stderr)")
        #expect(run.logLines(containing: "depth\tp1.txt\t1").count == 1, "\(run.stderr)")
        #expect(run.logLines(containing: "depth\tp2.txt\t2").count == 1, "\(run.stderr)")
        #expect(run.logLines(containing: "dropped\t3").count == 1, "\(run.stderr)")
        #expect(FileManager.default.fileExists(atPath: out + "/p2.txt"))
        #expect(!FileManager.default.fileExists(atPath: out + "/p3.txt"))
        let warnings = run.events("warning").filter { ($0["message"] as? String)?.contains("max_depth") == true }
        #expect(warnings.count == 1, "\(run.stdout)")
        // An add from `done` is the job's own: depth 0, within the limit.
        #expect(run.logLines(containing: "top\ttrue").count >= 1, "\(run.stderr)")
    }

    @Test func aURLMetAgainKeepsTheDepthOfItsFirstAddInAnySpelling() async throws {
        let server = try FaultServer()
        try server.put("fast.txt", randomBytes: 100)
        try server.put("slow.bin", randomBytes: 60_000, seed: 2)
        let out = try TempDir.make("depth-again")
        let job = try LuaJob()
        // slow.bin is the job's own add (depth 0); fast.txt's handler (depth 0,
        // so its adds are depth 1) adds it again, spelled with a raw space that
        // normalises to the first spelling: the same download, still depth 0.
        try job.write("job.lua", """
            local base = "\(server.url("/files/"))"
            local slow = dl.add(base .. "slow.bin?throttle=30000&tag=a%20b")
            dl.add(base .. "fast.txt")
            dl.on("finished", function(d, f)
              if d.name == "fast.txt" then
                dl.log("again", dl.add(base .. "slow.bin?throttle=30000&tag=a b") == slow)
              else
                dl.log("depth", d.name, d.depth)
              end
            end)
            """)
        let run = try await job.run("job.lua", out: out)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.logLines(containing: "again\ttrue").count == 1, "\(run.stderr)")
        #expect(run.logLines(containing: "depth\tslow.bin\t0").count == 1, "\(run.stderr)")
        #expect(try server.requests(matching: "/files/slow.bin").count == 1)
    }

    @Test func maxDepthOutOfRangeIsALoadError() async throws {
        let job = try LuaJob()
        try job.write("job.lua", "dl.config{ max_depth = -1 }\n")
        let run = try await DLPipeRun.run(["check", job.directory + "/job.lua", "--no-hooks"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("max_depth"), "\(run.stderr)")
    }
}
