import Foundation
import Testing

@testable import DLPipeLua

/// The static pass of `dlpipe check` and `run` (issue 40 item 3, lint.lua):
/// what its token scan sees as code, what it reports and what it leaves to
/// the run time.
@Suite struct CheckLintTests {
    func problems(_ source: String, isJob: Bool = true) throws -> [String] {
        try ScriptLint.problems(in: Array(source.utf8), displayName: "job.lua", isJob: isJob)
    }

    @Test func anUnknownNameAnywhereGetsItsLineAndTheNearestName() throws {
        #expect(try problems("local x = 1\ndl.sikp('x')\n") == ["job.lua:2: unknown name 'dl.sikp' (did you mean 'dl.skip'?)"])
        // Inside a handler, inside a nested function, in a kit table.
        let nested = try problems("""
            dl.on("finished", function(d, f)
              local function later()
                return dl.json.decdoe(f.body)
              end
              dl.htp.links(f.headers.link, d.url)
            end)
            """)
        #expect(nested == [
            "job.lua:3: unknown name 'dl.json.decdoe' (did you mean 'dl.json.decode'?)",
            "job.lua:5: unknown name 'dl.htp' (did you mean 'dl.http'?)",
        ])
        // No name near enough: the table's names instead.
        let far = try problems("dl.url.frobnicate('x')\n")
        #expect(far == ["job.lua:1: unknown name 'dl.url.frobnicate'; dl.url has: decode, encode, parse, query, resolve"])
        // A method call is a lookup too.
        #expect(try problems("dl:sikp()\n") == ["job.lua:1: unknown name 'dl.sikp' (did you mean 'dl.skip'?)"])
    }

    @Test func everyNameOfTheAPITableIsKnown() throws {
        let api = try LuaRuntime().run(Prelude.api, chunkName: Prelude.apiChunkName).first
        let names = ((api?["calls"]?.array ?? []) + (api?["values"]?.array ?? [])).compactMap { $0["name"]?.text }
        #expect(names.count > 30)
        let source = names.map { "local _ = \($0)\n" }.joined() + "local v = dl.var.anything.at_all\n"
        #expect(try problems(source) == [])
    }

    @Test func stringsCommentsAndLongBracketsAreNotCode() throws {
        let source = """
            local a = "dl.sikp \\" dl.sikp"
            local b = 'dl.sikp \\' dl.sikp'
            local c = [[ dl.sikp
            dl.sikp ]]
            local d = [==[ ]] dl.sikp ]=] ]==]
            -- dl.sikp
            --[[ dl.sikp
            dl.sikp ]]
            --[=[ ]] dl.sikp ]=]
            local e = "a\\z
                dl.sikp"
            local t = { dl = 1 }
            local u = t.dl.sikp
            dl.sikp()
            """
        #expect(try problems(source) == ["job.lua:14: unknown name 'dl.sikp' (did you mean 'dl.skip'?)"], "lines counted through strings and comments")
    }

    @Test func aCallAHandlerMayNotMakeIsAnErrorAtItsLine() throws {
        let source = """
            dl.on("finished", function(d, f)
              if f.bytes == 0 then
                dl.skip("empty")
              end
              for i = 1, 2 do dl.log(i) end
            end)
            dl.on("response", function(d, r)
              while false do dl.retry(1) end
              repeat dl.skip("x") until true
            end)
            dl.on("done", function(s) dl.on("finished", print) end)
            """
        #expect(try problems(source) == [
            "job.lua:3: dl.skip may not be called in a finished handler (allowed: response)",
            "job.lua:8: dl.retry may not be called in a response handler (allowed: retrying, failed)",
            "job.lua:11: dl.on may not be called in a done handler (allowed: top)",
        ])
    }

    @Test func onlyTheHandlerLiteralsOwnBodyIsItsContext() throws {
        // A nested function may be called from anywhere; a handler passed as a
        // variable is not followed; `dl` under another name is not tracked.
        let source = """
            local function helper() dl.skip("x") end
            dl.on("finished", function(d, f)
              local g = function() dl.skip("y") end
              local h = dl
              h.skip("z")
            end)
            local function late(d, f) dl.skip("w") return "x" end
            dl.on("finished", late)
            dl.on("response", late)
            """
        #expect(try problems(source) == [])
        // After a nested function's end, the handler's context is back.
        let back = try problems("""
            dl.on("finished", function(d, f)
              local g = function() return 1 end
              dl.skip("y")
            end)
            """)
        #expect(back == ["job.lua:3: dl.skip may not be called in a finished handler (allowed: response)"])
        // An unknown event is dl.on's own load error, not the scan's.
        #expect(try problems("dl.on('finsihed', function(d, f) dl.skip('x') end)\n") == [])
    }

    @Test func aLiteralAHandlerMayNotReturnIsAnError() throws {
        let source = """
            dl.on("response", function(d, r)
              if r.status == 203 then return "skip" end
              if r.status == 204 then return { } end
              if r.status == 205 then return dl.skip("fine") end
              if r.status == 206 then return nil end
              if r.status == 207 then return "a" .. r.type end
              return
            end)
            dl.on("done", function(s)
              if s.failed > 0 then return 1 elseif s.skipped > 0 then return 'some' else return 3 end
            end)
            dl.on("failed", function(d, e) return false end)
            dl.on("retrying", function(d, e) return true end)
            dl.on("finished", function(d, f) return "anything" end)
            """
        #expect(try problems(source) == [
            "job.lua:2: a response handler returns nothing or dl.skip(reason), not \"skip\"",
            "job.lua:3: a response handler returns nothing or dl.skip(reason), not a table",
            "job.lua:10: a done handler returns nothing or an exit code (0, 1 or 5-125), not \"some\"",
            "job.lua:10: a done handler returns nothing or an exit code (0, 1 or 5-125), not 3: dlpipe exits 3 when another run holds the lock",
            "job.lua:13: a retrying handler returns nothing, dl.retry(seconds) or false, not true",
        ])
        // A drop-in hook's done sets no exit code: what it returns is a warning at run time.
        #expect(try problems("dl.on('done', function(s) return 'x' end)\n", isJob: false) == [])
    }

    /// Tokens are made as the scan goes: a job of 100,000 adds scans in a
    /// state of 64 MiB, and the line count holds to its end.
    @Test func aLongJobScansInLittleMemory() throws {
        let source = (1...100_000).map { "dl.add(\"http://127.0.0.1:1/f\($0)\") -- \($0)" }.joined(separator: "\n") + "\ndl.ad('x')\n"
        #expect(try problems(source) == ["job.lua:100001: unknown name 'dl.ad' (did you mean 'dl.add'?)"])
    }

    @Test func theExamplesHaveNoProblems() throws {
        let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../examples").standardized.path
        let files = (FileManager.default.enumerator(atPath: examples)?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix(".lua") }
        #expect(files.count >= 9, "\(files)")
        for file in files {
            let data = try #require(FileManager.default.contents(atPath: examples + "/" + file))
            #expect(try ScriptLint.problems(in: [UInt8](data), displayName: file, isJob: !file.contains("hooks.d")) == [], "\(file)")
        }
    }
}
