import Foundation
import Testing

/// Hostile scripts: each breaks only its own download, with a message naming the
/// script and line, and the run goes on (SPEC 5).
@Suite struct LuaHostileTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "hostile")
        try server.put("victim.txt", bytes: Array("victim".utf8))
        try server.put("bystander.txt", bytes: Array("bystander".utf8))
    }

    /// Runs a job whose response handler does `body` for victim.txt only, and
    /// checks the victim fails with kind hook and the bystander finishes.
    private func expectHookFailure(_ body: String, event: String = "response", message: String, extra: [String] = [], fileKept: Bool = false, budget: Double = 0.5, config: String = "") async throws {
        try job.write("job.lua", """
            dl.config{ budget = \(budget)\(config.isEmpty ? "" : ", " + config) }
            dl.add(dl.var.base .. "/victim.txt")
            dl.add(dl.var.base .. "/bystander.txt")
            dl.on("\(event)", function(d, arg)
              if not d.url:match("victim") then return end
            \(body)
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"] + extra)
        #expect(run.status == 1, "\(body): \(run.stderr)")
        let failed = run.events("failed")
        #expect(failed.count == 1, "\(body): \(run.stdout)")
        #expect(failed.first?["kind"] as? String == "hook", "\(body)")
        let text = failed.first?["message"] as? String ?? ""
        #expect(text.contains("job.lua:"), "names the script: \(text)")
        #expect(text.contains(message), "\(body): \(text)")
        #expect(sameBytes(out + "/bystander.txt", Array("bystander".utf8)), "the run goes on")
        // A response hook fails before a byte is written; a finished hook fails
        // after the file is in place, and it goes back to its part file.
        #expect(!listing(out).contains("victim.txt"), "nothing under the final name")
        #expect(listing(out).contains("victim.txt.part") == fileKept)
    }

    @Test func runawayLoop() async throws {
        try await expectHookFailure("while true do end", message: "time")
    }

    @Test func runawayLoopInsidePcall() async throws {
        try await expectHookFailure("while true do pcall(function() while true do end end) end", message: "time")
    }

    @Test func coroutineLoop() async throws {
        try await expectHookFailure("""
            while true do
              local co = coroutine.wrap(function() for i = 1, 1e6 do end end)
              co()
            end
            """, message: "time")
    }

    @Test func memoryBomb() async throws {
        try await expectHookFailure("local t = {} for i = 1, 1e9 do t[i] = string.rep('x', 1 << 20) .. i end", message: "memory", budget: 10)
    }

    @Test func stringRepOfATerabyte() async throws {
        try await expectHookFailure("local s = string.rep('x', 1 << 40)", message: "memory", budget: 10)
    }

    @Test func deepRecursion() async throws {
        // Growing the Lua stack to its limit takes ~0.3 s alone and more on a busy
        // machine: the budget is raised so that the stack limit, the thing under
        // test, is what stops it (as memoryBomb does for the memory cap).
        try await expectHookFailure("local function f(n) return f(n + 1) + 1 end f(1)", message: "stack", budget: 10)
    }

    @Test(arguments: [
        ("error({ code = 1 })", "table"),
        ("error(nil)", "nil"),
        ("error(setmetatable({}, { __tostring = function() return 'custom object' end }))", "custom object"),
        ("local x = nil; x.field = 1", "attempt to index"),
    ])
    func errorObjects(_ body: String, _ message: String) async throws {
        try await expectHookFailure(body, message: message)
    }

    @Test func renameThroughDotDot() async throws {
        try await expectHookFailure("d.name = '../../escaped.txt'", message: "output directory")
        #expect(!FileManager.default.fileExists(atPath: out + "/../escaped.txt"))
        #expect(!FileManager.default.fileExists(atPath: out + "/../../escaped.txt"))
    }

    @Test func renameThroughASymlink() async throws {
        let outside = try TempDir.make("outside")
        try FileManager.default.createSymbolicLink(atPath: out + "/link", withDestinationPath: outside)
        try await expectHookFailure("d.dir = 'link'", message: "symlink")
        #expect(listing(outside).isEmpty, "nothing written outside")
    }

    @Test func moveInFinishedThroughDotDot() async throws {
        try await expectHookFailure("d.dir = '../../x'", event: "finished", message: "output directory", fileKept: true)
    }

    @Test func readOutsideTheOutputDirectory() async throws {
        try await expectHookFailure("dl.read('/etc/passwd')", message: "outside the output directory")
    }

    @Test func sandboxHasNoIoNorExecute() async throws {
        try job.write("job.lua", """
            dl.log("io", type(io), "execute", type(os.execute), "dofile", type(dofile), "require", type(require))
            dl.log("time", type(os.time), "getenv", type(os.getenv), "string", type(string.format))
            """)
        let sandboxed = try await job.run("job.lua", out: out)
        #expect(sandboxed.status == 0, "\(sandboxed.stderr)")
        #expect(sandboxed.logLines(containing: "io\tnil\texecute\tnil\tdofile\tnil\trequire\tnil").count == 1, "\(sandboxed.stderr)")
        #expect(sandboxed.logLines(containing: "time\tfunction\tgetenv\tfunction\tstring\tfunction").count == 1)
        let unsafe = try await job.run("job.lua", out: out, ["--unsafe-lua"])
        #expect(unsafe.logLines(containing: "io\ttable\texecute\tfunction").count == 1, "\(unsafe.stderr)")
    }

    @Test func apiCalledWhereItIsNotAllowedSaysSo() async throws {
        // Through a local: the call itself is beyond `check`'s scan (which refuses
        // `dl.retry(1)` in a response handler literal at load), so this reaches the run-time check.
        try await expectHookFailure("local retry = dl.retry; return retry(1)", message: "dl.retry may not be called in a response handler")
    }

    /// Two downloads whose handlers give them the same name: nothing is silently
    /// overwritten. (error() with a table and with nil: `errorObjects` above.)
    @Test(arguments: ["response", "finished"])
    func handlersRenamingOntoEachOther(_ event: String) async throws {
        try job.write("job.lua", """
            dl.add(dl.var.base .. "/victim.txt")
            dl.add(dl.var.base .. "/bystander.txt")
            dl.on("\(event)", function(d) d.name = "same.txt" end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(listing(out) == ["same.1.txt", "same.txt"], "the second takes name.1.ext")
        let contents = Set(listing(out).map { String(decoding: bytes(at: out + "/" + $0), as: UTF8.self) })
        #expect(contents == ["victim", "bystander"], "both files survive")
    }

    @Test func aHandlerThatAddsWithoutEndIsCutAtTheLimit() async throws {
        // Past max_downloads dl.add returns nil (one warning), so a handler that
        // adds until it is refused ends, and its own download is not failed.
        try job.write("job.lua", """
            dl.config{ max_downloads = 50 }
            dl.add(dl.var.base .. "/victim.txt")
            dl.add(dl.var.base .. "/bystander.txt")
            dl.on("response", function(d, r)
              if not d.url:match("victim") then return end
              local i = 0
              repeat i = i + 1 until dl.add{ url = dl.var.base .. "/bystander.txt", name = "copy" .. i } == nil
              dl.log("refused at", i)
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.events("failed").isEmpty, "\(run.stdout)")
        #expect(run.logLines(containing: "refused at\t49").count == 1, "the job added 2, the handler 48: \(run.stderr)")
        let warnings = run.events("warning").filter { ($0["message"] as? String)?.contains("the most it may queue") == true }
        #expect(warnings.count == 1, "\(run.stdout)")
        #expect(listing(out).filter { $0.hasPrefix("copy") }.count == 48, "the 48 added before the limit ran")
        #expect(listing(out).contains("victim.txt"))
    }
}
