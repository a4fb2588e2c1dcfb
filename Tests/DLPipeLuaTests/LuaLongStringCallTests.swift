import Foundation
import Testing

@testable import DLPipeLua
import TestSupport

/// What a probe gave, handed from the helper thread to the test.
private final class Probe: @unchecked Sendable {
    var error: LuaError?
    var results: [LuaValue] = []
    var seconds = 0.0
}

/// Runs `setup` (building large inputs, under a budget of its own) and then `source` with
/// `budget` in a fresh runtime on a thread of its own; gives up after `limit` seconds.
private func probe(_ source: String, setup: String = "", budget: Double, unsafe: Bool = false,
                   memory: Int = 1 << 30, limit: Double = 30) -> Probe? {
    onThread(limit: limit) {
        let probe = Probe()
        let rt = LuaRuntime(memoryLimit: memory, unsafe: unsafe)
        do throws(LuaError) {
            _ = try rt.call(rt.load(Array(setup.utf8), chunkName: "setup.lua", sharedEnvironment: true), [], budget: limit)
            let start = Date()
            defer { probe.seconds = Date().timeIntervalSince(start) }
            probe.results = try rt.call(rt.load(Array(source.utf8), chunkName: "probe.lua", sharedEnvironment: true), [], budget: budget)
        } catch {
            probe.error = error
        }
        return probe
    }
}

/// A long string for %q: every byte, each before a digit and before a letter (how %q writes
/// a control byte depends on the next one), repeated past the size the sandbox quotes itself.
private let quotable = """
    local parts = {}
    for b = 0, 255 do parts[#parts + 1] = string.char(b) .. "7" .. string.char(b) .. "x" end
    long = table.concat(parts):rep(400)
    """

/// Issue 35: one C call of the string library ran far past its budget (string.format("%q")
/// of 30 MB: 2.5 s under a budget of 1 s). These stop at the deadline, and say where.
@Suite struct LuaLongStringCallTests {
    @Test(arguments: [
        ("return string.format('%q', s)", "string.format"),
        ("return s:upper()", "string.upper"),
        ("return s:lower()", "string.lower"),
        ("return s:reverse()", "string.reverse"),
    ])
    func aLongStringCallStopsAtTheDeadline(_ call: String, _ function: String) throws {
        // 160 MB: every one of these takes well over the budget in one call.
        let outcome = try #require(probe("local x = 1\n" + call, setup: "s = ('aB\\n\\1'):rep(40 * 2^20)", budget: 0.1))
        let error = try #require(outcome.error, "\(call) returned")
        #expect(error.kind == .timeout, "\(error)")
        #expect(error.message == "probe.lua:2: time budget of 0.1 s exceeded in \(function)")
        #expect(outcome.seconds < 0.6, "\(call) overran its budget of 0.1 s by \(outcome.seconds - 0.1) s")
    }

    @Test func longQuotedStringsAreWhatLuaWrites() throws {
        let source = """
            return string.format('%q', long), string.format('<%5d|%q|%s|%%|%q|%-6.2f|%q>', 42, long, 'x', 'a\\n"b', 2.5, 7),
              select(2, pcall(string.format, '%q %d', long, 'x')), select(2, pcall(string.format, '%q %10q', long, 'y')),
              select(2, pcall(string.format, '%q %q', long)), select(2, pcall(string.format, '%d', 'x')),
            select(2, pcall(string.format, '%y', 1)), select(2, pcall(string.format)), select(2, pcall(string.format, ('%d'):rep(3), 1, 2))
            """
        let ours = try #require(probe(source, setup: quotable, budget: 10))
        let stock = try #require(probe(source, setup: quotable, budget: 10, unsafe: true))
        #expect(ours.error == nil && stock.error == nil, "\(String(describing: ours.error)) \(String(describing: stock.error))")
        #expect(ours.results.count == 9)
        for (i, (mine, theirs)) in zip(ours.results, stock.results).enumerated() where mine != theirs {
            let show = { (v: LuaValue) in String((v.text ?? "\(v)").prefix(120)) + "... (\(v.text?.utf8.count ?? 0) bytes)" }
            Issue.record("result \(i + 1) differs from liblua5.4's:\n  sandbox: \(show(mine))\n  stock:   \(show(theirs))")
        }
    }

    @Test func upperLowerAndReverseAreWhatLuaGives() throws {
        let source = "local all = {} for b = 0, 255 do all[#all + 1] = string.char(b) end all = table.concat(all):rep(5000)"
            + " return all:upper(), all:lower(), all:reverse(), (''):upper(), ('x'):reverse()"
        let ours = try #require(probe(source, budget: 10))
        let stock = try #require(probe(source, budget: 10, unsafe: true))
        #expect(ours.error == nil, "\(String(describing: ours.error))")
        #expect(ours.results.count == 5 && ours.results == stock.results)
    }
}
