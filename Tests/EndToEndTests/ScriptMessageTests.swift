import Foundation
import Testing

/// Messages for a script author's usual mistakes (issue 14): the nearest name
/// for a typo, the line of a tail call's error, and a hint for what the
/// sandbox removed.
@Suite struct ScriptMessageTests {
    let job: LuaJob
    let out: String

    init() throws {
        job = try LuaJob()
        out = try TempDir.make("messages")
    }

    /// `dlpipe check` on `source`: its exit status and first stderr line.
    func check(_ source: String) async throws -> (status: Int32, first: String) {
        let path = try job.write("job.lua", source)
        let run = try await DLPipeRun.run(["check", path])
        return (run.status, String(run.stderr.split(separator: "\n").first ?? ""))
    }

    @Test func aJobThatCannotBeReadSaysWhy() async throws {
        let missing = try await DLPipeRun.run(["run", job.directory + "/nonexistent.lua", "-d", out])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("nonexistent.lua: cannot read the file: No such file or directory"), "\(missing.stderr)")
        let folder = try await DLPipeRun.run(["run", job.directory, "-d", out])
        #expect(folder.status == 2)
        #expect(folder.stderr.contains("cannot read the file: it is a directory"), "\(folder.stderr)")
    }

    @Test func aMisspelledEventNameSuggestsTheNearestAndListsThem() async throws {
        let (status, first) = try await check("dl.on(\"finish\", function() end)\n")
        #expect(status == 2)
        #expect(first == "\(job.directory)/job.lua:1: unknown event 'finish' (did you mean 'finished'?); known: response, progress, retrying, finished, failed, done, request, placed", "\(first)")
    }

    @Test func aMisspelledConfigKeyAndAddFieldSuggestTheNearest() async throws {
        let config = try await check("dl.config{ dir = \"x\", concurency = 3 }\n")
        #expect(config.status == 2)
        #expect(config.first.hasPrefix("\(job.directory)/job.lua:1: unknown config key 'concurency' (did you mean 'concurrency'?); known: allow_insecure_redirects, budget, compressed, concurrency, cookie, cookie_jar, dir,"), "\(config.first)")
        let add = try await check("\n\ndl.add{ url = \"http://h/x\", nmae = \"x\" }\n")
        #expect(add.status == 2)
        #expect(add.first == "\(job.directory)/job.lua:3: dl.add: unknown field 'nmae' (did you mean 'name'?); known: url, name, dir, headers, sha256, meta, priority, timeout, max_time, speed_limit, speed_time, split, max_size, into, method, body", "\(add.first)")
    }

    @Test func aNameFarFromEveryKnownOneGetsNoGuess() async throws {
        let (status, first) = try await check("dl.on(\"whenever\", function() end)\n")
        #expect(status == 2)
        #expect(first.contains("unknown event 'whenever'; known: response,"), "\(first)")
        #expect(!first.contains("did you mean"))
    }

    @Test func anErrorOfACallInTheMiddleOfALineNamesThatLine() async throws {
        // Not a tail call: the frame is there, the line is exact.
        let (status, first) = try await check("local x = 1\nlocal y = dl.read(5)\n")
        #expect(status == 2)
        #expect(first.hasPrefix("\(job.directory)/job.lua:2: dl.read may not be called in the top level"), "\(first)")
    }

    /// `return dl.skip(...)` in the wrong event: Lua drops the handler's frame,
    /// so the error says so and names the line of the handler's dl.on.
    @Test func aTailCallsErrorNamesTheCallAndTheHandlersLine() async throws {
        let server = try FaultServer()
        try server.put("a.txt", bytes: Array("alpha".utf8))
        try job.write("job.lua", """
            dl.add(dl.var.base .. "/a.txt")
            local function late(d, f)
              local unused = 1
              return dl.skip("late")
            end
            dl.on("finished", late)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 1)
        let message = run.events("failed").first?["message"] as? String ?? ""
        #expect(message.hasPrefix("\(job.directory)/job.lua:6: dl.skip may not be called in a finished handler (allowed: response) (at a tail call, `return dl.skip(...)`, for which Lua keeps no line; the line is the handler's dl.on)"), "\(message)")
    }

    /// pcall(dl.remove, path) and pcall(dl.write, ...): the error still names
    /// the script's line (the frame under them is pcall's, which has none).
    @Test func aFileCallsErrorUnderPcallNamesTheScriptsLine() async throws {
        let server = try FaultServer()
        try server.put("a.txt", bytes: Array("alpha".utf8))
        try job.write("job.lua", """
            dl.add(dl.var.base .. "/a.txt")
            dl.on("finished", function(d, f)
              local ok, err = pcall(dl.remove, "a.txt.part")
              dl.log("remove:", err)
              ok, err = pcall(dl.write, "w.txt", 5)
              dl.log("write:", err)
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.logLines(containing: "remove:\t\(job.directory)/job.lua:3: dl.remove: ").count == 1, "\(run.stderr)")
        #expect(run.logLines(containing: "write:\t\(job.directory)/job.lua:5: dl.write wants the data as a string").count == 1, "\(run.stderr)")
    }

    @Test func aRemovedGlobalGetsAHintAndStillReadsAsNil() async throws {
        let io = try await check("if io then error('io is there') end\nlocal f = io.open('x')\n")
        #expect(io.status == 2)
        #expect(io.first.hasPrefix("\(job.directory)/job.lua:2: attempt to index a nil value (global 'io'): the sandbox has no io library: dl.read(path) reads a file of the output directory"), "\(io.first)")
        #expect(io.first.hasSuffix("(--unsafe-lua gives the full standard library)"))
        let require = try await check("local json = require('json')\n")
        #expect(require.first.contains("attempt to call a nil value (global 'require'): the sandbox loads no modules: put shared code in a drop-in hook"), "\(require.first)")
        let remove = try await check("os.remove('x')\n")
        #expect(remove.first.contains("attempt to call a nil value (field 'remove'): if this is os.remove, dl.remove(path) removes a download's file or one this job wrote"), "\(remove.first)")
        // A nil of the script's own gets no hint.
        let own = try await check("local t = {}\nt.go()\n")
        #expect(own.first.hasSuffix("attempt to call a nil value (field 'go')"), "\(own.first)")
    }
}

/// `dlpipe lua-defs` prints the definition file; it takes no arguments.
@Suite struct LuaDefsCommandTests {
    @Test func printsTheDefinitionFile() async throws {
        let run = try await DLPipeRun.run(["lua-defs"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasPrefix("---@meta\n"))
        #expect(run.stdout.contains("\nfunction dl.warn(...) end\n"))
        #expect(run.stderr.isEmpty)
        let extra = try await DLPipeRun.run(["lua-defs", "job.lua"])
        #expect(extra.status == 2)
        #expect(extra.stderr.contains("lua-defs takes no arguments"), "\(extra.stderr)")
    }
}
