import Foundation
import Testing

@testable import DLPipeLua
import TestSupport

/// Seconds taken by `body`.
private func timed(_ body: () -> Void) -> Double {
    let start = Date()
    body()
    return Date().timeIntervalSince(start)
}

/// Runs each script in one runtime with a 0.2 s budget: its error and the seconds it took.
private func runLoops(_ scripts: [String], name: String) -> [(error: LuaError?, seconds: Double)]? {
    onThread {
        let rt = LuaRuntime()
        var out: [(error: LuaError?, seconds: Double)] = []
        for script in scripts {
            var error: LuaError?
            let seconds = timed { error = failure(rt, script, name: name, budget: 0.2) }
            out.append((error, seconds))
        }
        // Still usable after all the timeouts.
        let after = try? eval(rt, "local s = 0 for i = 1, 100000 do s = s + i end return s")
        out.append((after == [5_000_050_000] ? nil : LuaError(kind: .runtime, message: "unusable"), 0))
        return out
    }
}

@Suite struct LuaBudgetTests {
    @Test func infiniteLoopTimesOutAndRuntimeSurvives() throws {
        let out = try #require(runLoops(["local x = 0\nwhile true do x = x + 1 end"], name: "loop.lua"))
        let e = try #require(out[0].error)
        #expect(e.kind == .timeout)
        #expect(e.message == "loop.lua:2: time budget of 0.2 s exceeded")
        #expect(out[0].seconds >= 0.18, "it ran until its budget")
        #expect(out[1].error == nil)
    }

    @Test func pcallCannotSwallowTheTimeout() throws {
        let out = try #require(runLoops([
            "while true do pcall(function() while true do end end) end",
            // Even a script that catches the stop and returns at once is reported as timed out.
            "return pcall(function() while true do end end)",
            // The handler of an error raised by the hook would run with hooks off.
            "while true do xpcall(function() while true do end end, function() while true do end end) end",
            // So would the __close methods of a coroutine killed by the hook, when closed.
            """
            local co = coroutine.create(function()
              local x <close> = setmetatable({}, {__close = function() while true do end end})
              while true do end
            end)
            coroutine.resume(co) coroutine.close(co) while true do end
            """,
            "error(setmetatable({}, {__tostring = function() while true do end end}))",
            // (The string metatable is locked now: the assignment fails, and the rest still times out.)
            """
            pcall(function() getmetatable("").__close = function() while true do end end end)
            pcall(coroutine.wrap(function() local s <close> = "x" while true do end end))
            while true do end
            """,
        ], name: "pcall.lua"))
        for (i, result) in out.dropLast().enumerated() {
            #expect(result.error?.kind == .timeout, "script \(i): \(String(describing: result.error))")
            #expect(result.seconds >= 0.18, "script \(i) ran until its budget")
        }
        #expect(out.last?.error == nil)
    }

    @Test func coroutinesShareTheBudget() throws {
        let out = try #require(runLoops([
            "coroutine.wrap(function() while true do end end)()",
            "while true do pcall(coroutine.wrap(function() while true do end end)) end",
            "while true do coroutine.resume(coroutine.create(function() for i = 1, 900 do end end)) end",
            "local function nest(n) if n == 0 then while true do end end coroutine.wrap(nest)(n - 1) end nest(50)",
        ], name: "co.lua"))
        for (i, result) in out.dropLast().enumerated() {
            #expect(result.error?.kind == .timeout, "script \(i): \(String(describing: result.error))")
            #expect(result.seconds >= 0.18, "script \(i) ran until its budget")
        }
        #expect(out.last?.error == nil)
    }
}

@Suite struct LuaMemoryTests {
    @Test func memoryBombHitsTheCap() throws {
        let rt = LuaRuntime(memoryLimit: 32 << 20)
        let bomb = "local t = {}\nfor i = 1, 1e9 do t[i] = string.rep('x', 1000) .. i end"
        let e = try #require(failure(rt, bomb, name: "bomb.lua", budget: 10))
        #expect(e.kind == .memory)
        #expect(e.message.hasPrefix("bomb.lua:2: "))
        #expect(e.message.hasSuffix("memory limit of 32 MiB exceeded"))
        rt.collectGarbage()
        #expect(rt.memoryInUse < 4 << 20)
        #expect(try eval(rt, "local t = {} for i = 1, 1000 do t[i] = i end return #t") == [1000])
    }

    @Test func hugeStringRepIsAMemoryError() throws {
        let rt = LuaRuntime(memoryLimit: 32 << 20)
        // Past 2 GiB plain Lua says "resulting string too large": the sandbox calls it memory.
        let huge = try #require(failure(rt, "local n = 1\nlocal s = string.rep('x', 2^40)", name: "rep.lua"))
        #expect(huge.kind == .memory)
        #expect(huge.message == "rep.lua:2: memory limit of 32 MiB exceeded")
        let method = try #require(failure(rt, "local s = ('x'):rep(2^25, ',')", name: "rep.lua"))
        #expect(method.message == "rep.lua:1: memory limit of 32 MiB exceeded")
        // A single refused allocation before the hook sampled a line: the chunk is named, not the line.
        let e = try #require(failure(rt, "local n = 1\nlocal s = table.concat({string.rep('x', 2^20)}, '', 1, 1) .. string.rep('y', 2^25 - 2^21)", name: "cat.lua"))
        #expect(e.kind == .memory)
        #expect(e.message.hasPrefix("cat.lua") && e.message.hasSuffix("memory limit of 32 MiB exceeded"))
        let unsafe = LuaRuntime(memoryLimit: 32 << 20, unsafe: true)
        let plain = try #require(failure(unsafe, "local s = string.rep('x', 2^40)"))
        #expect(plain.kind == .runtime || plain.kind == .memory)
        // A script raising the same text itself is an ordinary runtime error.
        let fake = try #require(failure(rt, "error('not enough memory')"))
        #expect(fake.kind == .runtime)
        // Inside a coroutine the memory error is re-raised by coroutine.wrap: still memory.
        let co = try #require(failure(rt, "coroutine.wrap(function() local t = {} for i = 1, 1e9 do t[i] = {} end end)()"))
        #expect(co.kind == .memory)
        #expect(try eval(rt, "return #string.rep('ab', 10)") == [20])
    }

    @Test func deadFunctionRefsAreReleased() throws {
        // Each call returns a closure holding ~1 KB; leaked refs would pass the 8 MiB cap.
        let rt = LuaRuntime(memoryLimit: 8 << 20)
        let make = try rt.load(Array("local n = ... local s = string.rep('x', 1000) .. n return function() return s end".utf8), chunkName: "make")
        for n in 0..<20_000 {
            let out = try rt.call(make, [.integer(Int64(n))], budget: 1)
            #expect(out.count == 1, "call \(n)")
        }
        rt.setGlobal("drained", true)
        rt.collectGarbage()
        #expect(rt.memoryInUse < 2 << 20)
    }

    @Test func swiftPushesAreNotCapped() throws {
        // The cap applies to Lua code only: a callback may return more than the cap.
        let rt = LuaRuntime(memoryLimit: 1 << 20)
        rt.register("big") { _ in [.string(Array(repeating: 0x41, count: 2 << 20))] }
        let e = try #require(failure(rt, "local s = big() return s .. s"))
        #expect(e.kind == .memory)
        #expect(try eval(rt, "return #big()") == [.integer(2 << 20)])
        // A script that stops the collector does not leave it stopped for the next call.
        _ = try eval(rt, "collectgarbage('stop')")
        #expect(try eval(rt, "return collectgarbage('isrunning')") == [true])
    }
}

@Suite struct LuaSandboxTests {
    @Test func dangerousFunctionsAreAbsent() throws {
        let rt = LuaRuntime()
        let out = try eval(rt, """
            return io, os.execute, os.remove, dofile, loadfile, require, debug, package, string.dump
            """)
        #expect(out == Array(repeating: .nil_, count: 9))
        let present = try eval(rt, "return type(os.time()), os.getenv('HOME') ~= nil, string.format('%03d', 7), type(os.clock()), type(os.date())")
        #expect(present == ["number", true, "007", "number", "string"])
        let e = try #require(failure(rt, "setmetatable({}, {__gc = function() while true do end end})"))
        #expect(e.kind == .runtime && e.message.contains("__gc"))
    }

    @Test func sandboxStringRepMatchesLua() throws {
        // The sandbox's own string.rep against the library's, on edge cases and sizes.
        let script = """
            local out = {}
            for _, s in ipairs({"", "x", "ab", "a\\0b"}) do
              for _, sep in ipairs({"", ",", "--"}) do
                for _, n in ipairs({-1, 0, 1, 2, 3, 7, 1000}) do
                  out[#out + 1] = string.rep(s, n, sep)
                end
              end
            end
            out[#out + 1] = ("xyz"):rep(5)
            return table.concat(out, "|")
            """
        let sandboxed = try eval(LuaRuntime(), script)
        let standard = try eval(LuaRuntime(unsafe: true), script)
        #expect(sandboxed == standard)
        // Lua's loop would spin for years in C, out of the hook's reach.
        let rt = LuaRuntime()
        #expect(try eval(rt, "return #string.rep('', 2^60), #string.rep('', 2^60, ''), #string.rep('x', 1e7)") == [0, 0, 10_000_000])
    }

    @Test func binaryChunksAreRefused() throws {
        let unsafe = LuaRuntime(unsafe: true)
        let dumped = try eval(unsafe, "return string.dump(function() return 1 end)")
        guard case .string(let blob)? = dumped.first else { Issue.record("no dump"); return }
        #expect(try eval(unsafe, "return io ~= nil, debug ~= nil") == [true, true])

        let rt = LuaRuntime()
        rt.setGlobal("blob", .string(blob))
        let out = try eval(rt, "local f, err = load(blob) local g, err2 = load(blob, 'b', 'b') return f, err, g, err2")
        #expect(out[0] == .nil_ && out[2] == .nil_)
        #expect(out[1].text?.contains("binary") == true && out[3].text?.contains("binary") == true)
        do {
            _ = try rt.load(blob, chunkName: "blob.luac")
            Issue.record("binary chunk loaded")
        } catch {
            #expect(error.kind == .syntax && error.message.hasPrefix("blob.luac: "))
        }
    }

    @Test func scriptsHaveTheirOwnGlobals() throws {
        let rt = LuaRuntime()
        rt.setGlobal("shared.value", 7)
        rt.register("twice") { args in [.integer((args.first?.int ?? 0) * 2)] }
        let a = try eval(rt, "x = 'a' _G.y = 1 return function() return x end, shared.value, twice(2)", name: "a.lua")
        let b = try eval(rt, "local before = x x = 'b' return before, y, shared.value, twice(3)", name: "b.lua")
        #expect(Array(a.dropFirst()) == [7, 4])
        #expect(b == [.nil_, .nil_, 7, 6])
        guard case .function(let readA)? = a.first else { Issue.record("no function"); return }
        #expect(try rt.call(readA, [], budget: 1) == ["a"])
        #expect(rt.getGlobal("x") == .nil_ && rt.getGlobal("shared.value") == 7)
        // load() gives a chunk its caller's environment by default.
        #expect(try eval(rt, "z = 5 return load('return z')()") == [5])
        #expect(try eval(rt, "return z") == [.nil_])
        // A prelude run with `run` works in the shared globals: it defines and removes globals for everyone.
        rt.setGlobal("__secret", 1)
        try rt.run("function helper() return 'h' end _G.api = {} __secret = nil", chunkName: "prelude.lua")
        #expect(try eval(rt, "return helper(), type(api), __secret") == ["h", "table", .nil_])
    }

    @Test func eachScriptHasItsOwnLibraryTablesAndAFrozenDl() throws {
        let rt = LuaRuntime()
        rt.register("dl.add") { _ in ["real"] }
        rt.setGlobal("dl.url.base", "http://h/")
        // A hostile script: its own copies change, everything else refuses.
        let hostile = try eval(rt, """
            string.upper = function() return "evil" end
            table.insert = function() error("evil") end
            tostring = function() return "evil" end
            local results = {}
            for _, probe in ipairs({
              function() dl.add = function() return "evil" end end,
              function() dl.url.base = "evil" end,
              function() dl.fresh = 1 end,
              function() rawset(dl, "add", print) end,
              function() rawset(dl.url, "base", "evil") end,
              function() setmetatable(dl, nil) end,
              function() getmetatable("").__index.upper = function() return "evil" end end,
              function() table.move({ print }, 1, 1, 1, dl) end,
            }) do
              local ok, err = pcall(probe)
              results[#results + 1] = ok and "changed" or "refused"
            end
            return results, dl.add(), dl.url.base, string.upper("x"), ("x"):upper(), getmetatable("")
            """, name: "hook.lua")
        #expect(hostile.first == .table(Dictionary(uniqueKeysWithValues: (1...8).map { (LuaValue.integer(Int64($0)), LuaValue("refused")) })),
                "\(String(describing: hostile.first))")
        #expect(Array(hostile.dropFirst()) == ["real", "http://h/", "evil", "X", false], "its own string.upper is its own; methods are not")
        // Another script sees the untouched world.
        let other = try eval(rt, """
            local t = {} table.insert(t, "a")
            local keys = {} for k in pairs(dl) do keys[#keys + 1] = k end table.sort(keys)
            return string.upper("x"), tostring(1), t[1], dl.add(), dl.url.base, table.concat(keys, ","), type(dl.url)
            """, name: "job.lua")
        #expect(other == ["X", "1", "a", "real", "http://h/", "add,url", "table"])
    }
}
