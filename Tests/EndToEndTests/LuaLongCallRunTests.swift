import Foundation
import Testing

/// The probes of issue 19 run by `dlpipe run`: a handler stuck in one long C call, or one
/// that crashed Lua 5.4.4, fails only its own download, soon; the bystander finishes and the
/// run exits 1. Each run is killed after 150 s, so a hang shows as status 137, not a stuck
/// suite. Alone each takes 1 to 3 s. The time bounded is the child's own, from its spawn to
/// its exit (`DLPipeRun.seconds`): measured in the async test, it also held the wait for a
/// free thread of the concurrency pool, which the full suite's synchronous Lua tests keep
/// busy for seconds each (they wait on semaphores while a Lua thread runs to its deadline),
/// and the string.find probe once measured 40 s so.
/// One at a time: each probe keeps a core busy until its deadline and holds up to 100 MB, and
/// a dozen at once on a small machine is a test of the machine, not of the budget.
@Suite(.serialized) struct LuaLongCallRunTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "longcall")
        try server.put("victim.txt", bytes: Array("victim".utf8))
        try server.put("bystander.txt", bytes: Array("bystander".utf8))
    }

    /// `topLevel` runs before the handler is set, under the top level's own longer budget:
    /// large inputs built there cannot use up the handler's budget on a loaded machine.
    private func expectHookFailure(_ body: String, message: String, line: Int = 6, budget: Double = 1, topLevel: String = "") async throws {
        try job.write("job.lua", """
            dl.config{ budget = \(budget) }\(topLevel.isEmpty ? "" : " " + topLevel)
            dl.add(dl.var.base .. "/victim.txt")
            dl.add(dl.var.base .. "/bystander.txt")
            dl.on("response", function(d)
              if not d.url:match("victim") then return end
            \(body)
            end)
            """)
        // No wall-clock bound (it took 148 s against 120 in a loaded full
        // suite): the hook error below says what stopped the run, and the
        // run's own `within` fails a run that never ends.
        let run = try await DLPipeRun.run(
            ["run", job.directory + "/job.lua", "-d", out, "--json", "--var", "base=\(server.url("/files"))"],
            under: [], within: 150)
        #expect(run.status == 1, "\(body): status \(run.status) \(run.stderr)")
        let failed = run.events("failed")
        #expect(failed.count == 1, "\(body): \(run.stdout)")
        #expect(failed.first?["kind"] as? String == "hook")
        let text = failed.first?["message"] as? String ?? ""
        #expect(text.contains("job.lua:\(line):"), "names the script and line: \(text)")
        #expect(text.contains(message), "\(body): \(text)")
        #expect(sameBytes(out + "/bystander.txt", Array("bystander".utf8)), "the run goes on")
    }

    @Test(arguments: [
        ("string.find(('a'):rep(40), '.-.-.-.-.-.-.-.-.-.-b')", "time budget of 1 s exceeded in string.find"),
        ("local s = ('a'):rep(100000) s:match('a*b')", "in string.match"),
        ("local s = ('a'):rep(100000) s:gsub('a*b', 'x')", "in string.gsub"),
        ("local s = ('a'):rep(100000) for x in s:gmatch('a*b') do end", "in string.gmatch"),
        ("table.move({}, 1, 2^62, 2)", "in table.move"),
    ])
    func aHandlerInALongCCall(_ body: String, _ message: String) async throws {
        try await expectHookFailure(body, message: message)
    }

    @Test func aPlainFindOfALongNeedleFinishes() async throws {
        try await expectHookFailure(
            "local hay = ('a'):rep(2 * 2^20) assert(not hay:find(('a'):rep(2^20 - 1) .. 'b', 1, true)) error('found nothing')",
            message: "found nothing")
    }

    @Test func comparingAndSortingLargeStringsFullOfNul() async throws {
        try await expectHookFailure(
            "local a = ('\\0'):rep(48 * 2^20) local b = a .. 'x' while true do local _ = a < b end",
            message: "time budget of 1 s exceeded")
        // The strings are built at the top level: built in the handler, a loaded CI machine
        // once spent the whole budget on them and the timeout named the concatenation.
        try await expectHookFailure(
            "table.sort(t)",
            message: "in table.sort",
            topLevel: "local a = ('\\0'):rep(24 * 2^20) local b = a .. 'x' t = {} for i = 1, 64 do t[i] = i % 2 == 0 and a or b end")
    }

    @Test func loadingALongChunk() async throws {
        try await expectHookFailure("assert(load(('a=1 '):rep(2^19)))", message: "the sandbox's limit")
    }

    @Test func dlStoreSetOfAHugeTable() async throws {
        try await expectHookFailure(
            "local t = {} for i = 1, 500000 do t[i] = i end dl.store.set('big', t)",
            message: "dl.store.set: the arguments hold more than 100000 table entries")
    }

    @Test func urlParseOfAHugeTableInALoop() async throws {
        try await expectHookFailure(
            "local t = {} for i = 1, 500000 do t[i] = i end while true do pcall(dl.url.parse, t) end",
            message: "time budget of 1 s exceeded")
    }

    @Test func nestedCoroutineClosesDoNotCrash() async throws {
        try await expectHookFailure("""
            local coro = false
              for i = 1, 30000 do
                local previous = coro
                coro = coroutine.create(function()
                  local cc <close> = setmetatable({}, { __close = function()
                    if previous then assert(coroutine.close(previous)) end
                  end })
                  coroutine.yield()
                end)
                coroutine.resume(coro)
              end
              assert(coroutine.close(coro))
            """, message: "C stack overflow", line: 17, budget: 20)
    }
}
