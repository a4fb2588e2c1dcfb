import Foundation
import Testing

@testable import DLPipeLua
import TestSupport

/// Holds a result handed from the helper thread to the test.
private final class Outcome: @unchecked Sendable {
    var error: LuaError?
    var results: [LuaValue] = []
    var seconds = 0.0
}

/// Runs `source` in a fresh runtime on its own thread (as dlpipe runs Lua) with `budget`, and
/// gives up after `limit` seconds: a call that escapes the budget fails the test instead of
/// hanging the suite (the stuck thread is abandoned).
/// A `setup` chunk runs first with a budget of its own, so that building large inputs on a
/// loaded machine cannot use up the probe's budget before the call it is about to test.
private func run(_ source: String, setup: String? = nil, budget: Double = 0.5, limit: Double = 8, memory: Int = 256 << 20) -> Outcome? {
    onThread(limit: limit) {
        let outcome = Outcome()
        let rt = LuaRuntime(memoryLimit: memory)
        if let setup {
            do throws(LuaError) {
                _ = try rt.call(rt.load(Array(setup.utf8), chunkName: "setup.lua", sharedEnvironment: true), [], budget: limit)
            } catch {
                outcome.error = error
                return outcome
            }
        }
        let start = Date()
        do throws(LuaError) {
            outcome.results = try rt.call(rt.load(Array(source.utf8), chunkName: "probe.lua"), [], budget: budget)
        } catch {
            outcome.error = error
        }
        outcome.seconds = Date().timeIntervalSince(start)
        return outcome
    }
}

/// Each probe of issue 19 that used to run inside one C call past any budget (hours, or for
/// ever) now stops at its deadline with a timeout naming the line and the function.
@Suite struct LuaLongCallTests {
    @Test(arguments: [
        ("string.find(('a'):rep(40), '.-.-.-.-.-.-.-.-.-.-b')", "string.find"),
        ("local s = ('a'):rep(100000) return s:match('a*b')", "string.match"),
        ("local s = ('a'):rep(100000) return s:gsub('a*b', 'x')", "string.gsub"),
        ("local s = ('a'):rep(100000) for x in s:gmatch('a*b') do end", "string.gmatch"),
        ("table.move({}, 1, 2^62, 2)", "table.move"),
    ])
    func aLongCCallStopsAtTheDeadline(_ probe: String, _ function: String) throws {
        let outcome = try #require(run("local x = 1\n" + probe))
        let error = try #require(outcome.error, "\(probe) returned")
        #expect(error.kind == .timeout, "\(error)")
        #expect(error.message == "probe.lua:2: time budget of 0.5 s exceeded in \(function)")
        #expect(outcome.seconds >= 0.45, "\(probe) ran until its budget: \(outcome.seconds) s")
    }

    @Test func aPlainFindOfALongNeedleIsLinear() throws {
        // lstrlib's memchr + memcmp loop is quadratic: a 1 MB needle in 2 MB ran for hours.
        let outcome = try #require(run("""
            local hay = ('a'):rep(2 * 2^20)
            return hay:find(('a'):rep(2^20 - 1) .. 'b', 1, true), hay:find(('a'):rep(2^20), 1, true)
            """))
        #expect(outcome.error == nil, "\(String(describing: outcome.error))")
        #expect(outcome.results == [.nil_, .integer(1), .integer(1 << 20)])
    }

    @Test func comparingLargeStringsFullOfNulStopsSoonAfterTheDeadline() throws {
        // One `<` of two 64 MB strings of NULs is 64 million strcoll calls; the count hook
        // alone would wait 1,000 of them. The watchdog makes the next instruction stop.
        let outcome = try #require(run("""
            local a = ('\\0'):rep(64 * 2^20)
            local b = a .. 'x'
            local n = 0
            while true do if a < b then n = n + 1 end end
            """, budget: 1, limit: 15))
        let error = try #require(outcome.error)
        #expect(error.kind == .timeout, "\(error)")
        #expect(outcome.seconds >= 0.9, "it ran until its budget: \(outcome.seconds) s")
    }

    @Test func sortingLargeStringsFullOfNulStopsAtTheDeadline() throws {
        // The 32 MB strings are built in a setup chunk: under a loaded CI machine building
        // them once used up the whole budget, and the timeout named line 2, not the sort.
        let outcome = try #require(run("table.sort(t)", setup: """
            local a = ('\\0'):rep(32 * 2^20)
            local b = a .. 'x'
            t = {}
            for i = 1, 64 do t[i] = (i % 2 == 0) and a or b end
            """, budget: 1, limit: 15))
        let error = try #require(outcome.error)
        #expect(error.kind == .timeout, "\(error)")
        #expect(error.message.hasSuffix("in table.sort"), "\(error)")
        #expect(outcome.seconds >= 0.9, "it ran until its budget: \(outcome.seconds) s")
    }

    @Test func loadRefusesAChunkLargerThanTheLimit() throws {
        let outcome = try #require(run("""
            local f, err = load(('a=1 '):rep(2^19))
            local parts, i = { ('a=1 '):rep(2^17), ('a=1 '):rep(2^17), ('a=1 '):rep(2^17) }, 0
            local g, err2 = load(function() i = i + 1 return parts[i] end)
            local small = load(('a=1 '):rep(1000))
            return f, err, g, err2, type(small)
            """))
        let results = try #require(outcome.results.count == 5 ? outcome.results : nil, "\(String(describing: outcome.error))")
        #expect(results[0] == .nil_)
        #expect(results[1].text?.contains("the sandbox's limit") == true, "\(results[1])")
        #expect(results[2] == .nil_)
        #expect(results[3].text?.contains("the sandbox's limit") == true, "\(results[3])")
        #expect(results[4] == LuaValue("function"))
    }

    @Test func theWorstChunkUnderTheLoadLimitCompilesInLittleTime() throws {
        // Gotos and labels are matched pairwise by the compiler: the slowest text known.
        let outcome = try #require(run("""
            local t = {}
            for i = 1, 20000 do t[#t + 1] = 'goto l' .. i .. ' ::l' .. i .. ':: ' end
            local src = table.concat(t)
            assert(#src < 2^20)
            local f, err = load(src)
            return type(f)
            """, budget: 5, limit: 10))
        #expect(outcome.error == nil, "\(String(describing: outcome.error))")
    }

    @Test func nestedCoroutineClosesFailInsteadOfCrashing() throws {
        // Lua 5.4.4 (Debian 12) segfaults on this chain (fixed in 5.4.5).
        let outcome = try #require(run("""
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
            return coroutine.close(coro)
            """, budget: 10, limit: 20))
        #expect(outcome.error == nil, "\(String(describing: outcome.error))")
        #expect(outcome.results.first == .boolean(false))
        #expect(outcome.results.dropFirst().first?.text?.contains("C stack overflow") == true, "\(outcome.results)")
    }

    @Test func nestedWrappedCoroutinesStillWork() throws {
        // Generators inside generators: each level is a few C calls of Lua's 200 (plain Lua 5.4.4
        // nests 97 of these; the sandbox's wrappers spend more per level and stop near 48).
        let outcome = try #require(run("""
            local function gen(n)
              return coroutine.wrap(function()
                if n == 0 then coroutine.yield(0) return end
                for v in gen(n - 1) do coroutine.yield(v + 1) end
              end)
            end
            local best = 0
            for d = 1, 100 do
              local ok, v = coroutine.resume(coroutine.create(function() return gen(d)() end))
              if ok and v == d then best = d else break end
            end
            return best
            """))
        #expect(outcome.error == nil, "\(String(describing: outcome.error))")
        #expect((outcome.results.first?.int ?? 0) >= 40, "\(outcome.results)")
    }

    @Test func patternsOverALargePageStillWork() throws {
        // Ordinary scraping: 40 MB of links, matched with gmatch, find and gsub, well inside 2 s.
        let outcome = try #require(run("""
            local page = ('<a href="/x/1.jpg">x</a> filler text '):rep(1000000)
            local n = 0
            for href in page:gmatch('href="([^"]+)"') do n = n + 1 end
            local _, replaced = page:gsub('%.jpg', '.png')
            return n, replaced, page:find('filler', 1, true)
            """, budget: 10, limit: 20))
        #expect(outcome.error == nil, "\(String(describing: outcome.error))")
        #expect(outcome.results.prefix(3) == [.integer(1_000_000), .integer(1_000_000), .integer(26)])
    }

    @Test func aHugeTableIsRefusedBeforeSwiftConvertsIt() throws {
        let outcome = try #require(onThread(limit: 10) { () -> Outcome in
            let outcome = Outcome()
            let rt = LuaRuntime()
            rt.register("f") { args in [.integer(Int64(args.count))] }
            do throws(LuaError) {
                let source = """
                    local t = {} for i = 1, 500000 do t[i] = i end
                    local ok, err = pcall(f, t)
                    local small = f({ 1, 2, 3 })
                    local loops = 0
                    for i = 1, 100 do pcall(f, t) loops = loops + 1 end
                    return ok, err, small, loops
                    """
                outcome.results = try rt.call(rt.load(Array(source.utf8), chunkName: "probe.lua"), [], budget: 5)
            } catch {
                outcome.error = error
            }
            return outcome
        })
        #expect(outcome.error == nil, "\(String(describing: outcome.error))")
        #expect(outcome.results.first == .boolean(false))
        #expect(outcome.results.dropFirst().first?.text?.hasPrefix("the arguments hold more than 100000 table entries") == true, "\(outcome.results.prefix(2).map(\.text))")
        #expect(outcome.results.dropFirst(2) == [.integer(1), .integer(100)])
    }
}
