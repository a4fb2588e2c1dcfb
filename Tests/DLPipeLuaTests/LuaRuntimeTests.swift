import Foundation
import Testing

@testable import DLPipeLua
import TestSupport

@Suite struct LuaValueTests {
    @Test func scalarsStringsAndTablesRoundTrip() throws {
        let rt = LuaRuntime()
        let identity = try rt.load(Array("return ...".utf8), chunkName: "id")
        let odd: [UInt8] = [0x61, 0x00, 0xFF, 0xC3, 0x28]
        let nested: LuaValue = ["name": "n", "list": [1, 2.5, "three"], "deep": ["a": ["b": true]]]
        let args: [LuaValue] = [.nil_, true, false, 0, .integer(.max), .integer(.min), 1.5, .number(-2),
                                .string(odd), "", nested, [10, 20, 30]]
        let out = try rt.call(identity, args, budget: 1)
        #expect(out == args)
        // Types as Lua sees them: integer vs float, string length with NUL.
        let check = try rt.load(Array("""
            local i, f, s, t = ...
            return math.type(i), math.type(f), #s, s:byte(2), #t, t[3]
            """.utf8), chunkName: "types")
        let types = try rt.call(check, [7, .number(7), .string(odd), [1, 2, 3]], budget: 1)
        #expect(types == ["integer", "float", 5, 0, 3, 3])
    }

    @Test func luaTablesConvertWithLimits() throws {
        let rt = LuaRuntime()
        let out = try eval(rt, """
            local t = {1, 2, 3, x = {y = {z = "deep"}}, [1.5] = "f", [true] = false}
            local cyc = {} cyc.self = cyc
            local d = {} local cur = d
            for i = 1, 40 do cur.next = {} cur = cur.next end
            return t, cyc, d, {f = function(a) return a * 2 end}
            """)
        #expect(out[0].array == nil)
        #expect(out[0][1] == 1 && out[0][3] == 3)
        #expect(out[0]["x"]?["y"]?["z"]?.text == "deep")
        #expect(out[0][.number(1.5)] == "f")
        #expect(out[1]["self"] == .opaque("table"))
        var depth = 0
        var cur = out[2]
        while case .table = cur, let next = cur["next"] { depth += 1; cur = next }
        #expect(depth == LuaValue.maxDepth)
        #expect(cur == .opaque("table"))
        guard case .function(let f)? = out[3]["f"] else { Issue.record("no function"); return }
        #expect(try rt.call(f, [21], budget: 1) == [42])
    }

    @Test func conveniences() {
        #expect(LuaValue("é").text == "é")
        #expect(LuaValue.string([0xFF]).text == "\u{FFFD}")
        #expect(LuaValue.number(3).int == 3 && LuaValue.number(3.5).int == nil)
        #expect(LuaValue.integer(2).double == 2)
        #expect(LuaValue.array(["a", "b"]).array == ["a", "b"])
        #expect(LuaValue.nil_.isTruthy == false && LuaValue.integer(0).isTruthy)
    }
}

extension LuaValue {
    /// Test helper: the value under any key.
    subscript(key: LuaValue) -> LuaValue? {
        guard case .table(let t) = self else { return nil }
        return t[key]
    }
}

@Suite struct LuaSwiftFunctionTests {
    @Test func registeredFunctionIsCalled() throws {
        let rt = LuaRuntime()
        rt.register("dl.math.add") { args in [.integer((args[0].int ?? 0) + (args[1].int ?? 0))] }
        #expect(try eval(rt, "return dl.math.add(2, 3)") == [5])
    }

    @Test func thrownErrorIsCatchableByPcall() throws {
        let rt = LuaRuntime()
        rt.register("fail") { _ throws(LuaCallError) in throw LuaCallError("boom") }
        let out = try eval(rt, "local ok, err = pcall(function() fail() end) return ok, err", name: "caught.lua")
        #expect(out.first == false)
        #expect(out.last?.text == "caught.lua:1: boom")
    }

    @Test func uncaughtErrorIsRuntimeWithTraceback() throws {
        let rt = LuaRuntime()
        rt.register("fail") { _ throws(LuaCallError) in throw LuaCallError("boom") }
        let error = try #require(failure(rt, "local function inner()\n fail()\nend\ninner()", name: "uncaught.lua"))
        #expect(error.kind == .runtime)
        #expect(error.message == "uncaught.lua:2: boom")
        #expect(error.traceback?.contains("uncaught.lua:2") == true)
        #expect(error.traceback?.contains("uncaught.lua:4") == true)
    }

    @Test func callbacksMayCallBackIntoLua() throws {
        let rt = LuaRuntime()
        rt.register("apply") { [unowned rt] args throws(LuaCallError) in
            guard case .function(let f) = args[0] else { throw LuaCallError("not a function") }
            do throws(LuaError) { return try rt.call(f, Array(args.dropFirst()), budget: 1) } catch { throw LuaCallError(error.message) }
        }
        #expect(try eval(rt, "return apply(function(v) return v * 2 end, 21)") == [42])
        // From inside a coroutine the nested call must run on the coroutine's thread.
        #expect(try eval(rt, "return coroutine.wrap(function() return apply(function(v) return v + 1 end, 1) end)()") == [2])
    }
}

@Suite struct LuaErrorTests {
    @Test func syntaxErrorNamesChunkAndLine() {
        let rt = LuaRuntime()
        do {
            _ = try rt.load(Array("local a = 1\nx = = 2".utf8), chunkName: "bad.lua")
            Issue.record("expected a syntax error")
        } catch {
            #expect(error.kind == .syntax)
            #expect(error.message.hasPrefix("bad.lua:2:"))
        }
    }

    @Test func nonStringErrorObjectsAreReadable() throws {
        let rt = LuaRuntime()
        let table = try #require(failure(rt, "error({code = 1})"))
        #expect(table.kind == .runtime && table.message == "(error object is a table value)")
        let nilError = try #require(failure(rt, "error(nil)"))
        #expect(nilError.kind == .runtime && nilError.message == "(error object is a nil value)")
        let custom = try #require(failure(rt, "error(setmetatable({}, {__tostring = function() return 'custom' end}))"))
        #expect(custom.kind == .runtime && custom.message == "custom")
        let number = try #require(failure(rt, "error(42)"))
        #expect(number.message == "42")
        #expect(try eval(rt, "return 1") == [1])
    }

    @Test func deepRecursionFailsCleanly() throws {
        let rt = LuaRuntime()
        let error = try #require(failure(rt, "local function f() return f() + 1 end\nf()", name: "rec.lua"))
        #expect(error.kind == .runtime || error.kind == .memory)
        #expect(error.message.contains("stack overflow") || error.kind == .memory)
        #expect(try eval(rt, "return 1") == [1])
    }
}
