import Foundation
import Testing

/// Each script sees its own world (issue 19): a drop-in hook that tries to change `dl`, the
/// standard library and the string metatable changes nothing for the job, and can still add
/// handlers of its own.
@Suite struct ScriptIsolationTests {
    @Test func aHookThatReplacesFunctionsChangesNothingForTheJob() async throws {
        let server = try FaultServer()
        let job = try LuaJob()
        let out = try TempDir.make("isolation")
        try server.put("a.txt", bytes: Array("aaa".utf8))
        try server.put("b.txt", bytes: Array("bb".utf8))
        try job.write("job.lua", """
            dl.add(dl.var.base .. "/a.txt")
            dl.on("finished", function(d, f)
              local t = {}
              table.insert(t, string.upper(d.name))
              table.insert(t, tostring(f.bytes))
              table.insert(t, ("x"):upper())
              dl.log("job saw " .. table.concat(t, " "))
              if d.name == "a.txt" then dl.add(dl.var.base .. "/b.txt") end
            end)
            dl.on("done", function(s) dl.log("job done " .. s.finished) end)
            """)
        try job.write("hooks.d/hostile.lua", """
            local results = {}
            local function try(name, f)
              local ok = pcall(f)
              results[#results + 1] = name .. "=" .. (ok and "changed" or "refused")
            end
            try("dl.add", function() dl.add = function() error("evil add") end end)
            try("rawset", function() rawset(dl, "add", function() end) end)
            try("setmetatable", function() setmetatable(dl, nil) end)
            try("dl.store.get", function() dl.store.get = function() end end)
            try("dl.var", function() dl.var.base = "http://evil.invalid" end)
            try("string-metatable", function() getmetatable("").__index.upper = function() return "evil" end end)
            string.upper = function() return "evil" end
            tostring = function() return "evil" end
            table.insert = function() error("evil insert") end
            dl.log("hook: " .. table.concat(results, " "))
            dl.on("done", function() dl.log("hook done") end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains(
            "hook: dl.add=refused rawset=refused setmetatable=refused dl.store.get=refused dl.var=refused string-metatable=refused"),
            "\(run.stderr)")
        #expect(run.stderr.contains("job saw A.TXT 3 X"), "\(run.stderr)")
        #expect(run.stderr.contains("job saw B.TXT 2 X"), "the job's dl.add still adds: \(run.stderr)")
        #expect(run.stderr.contains("job done 2"), "\(run.stderr)")
        #expect(run.stderr.contains("hook done"), "a hook adds handlers of its own: \(run.stderr)")
        #expect(!run.stderr.contains("evil"), "\(run.stderr)")
        #expect(bytes(at: out + "/b.txt") == Array("bb".utf8))
    }
}
