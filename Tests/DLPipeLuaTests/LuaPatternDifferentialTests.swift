import Foundation
import Testing

@testable import DLPipeLua
import TestSupport

/// Runs the driver over `cases` in a runtime: the sandbox (dlpipe's matcher,
/// Sources/CLua/dl_lua_match.h) or an unsafe one (liblua5.4's own string library).
/// Returns one outcome line per case.
private func outcomes(_ cases: [PatternCase], stock: Bool) -> [String]? {
    onThread(limit: 60) { () -> [String]? in
        let rt = LuaRuntime(unsafe: stock)
        let source = "local cases = {\n" + cases.map(\.lua).joined(separator: ",\n") + "\n}\n" + patternDriver
        do throws(LuaError) {
            let results = try rt.call(rt.load(Array(source.utf8), chunkName: "driver.lua"), [], budget: 50)
            guard case .string(let bytes)? = results.first else { return nil }
            return String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        } catch {
            Issue.record("the driver failed: \(error)")
            return nil
        }
    } ?? nil
}

/// Compares both libraries over `cases`, recording the first differences.
private func expectSameAsStock(_ cases: [PatternCase], _ label: String) throws {
    // (no #require on the calls themselves: it would print all the cases)
    guard let ours = outcomes(cases, stock: false), let stock = outcomes(cases, stock: true) else {
        Issue.record("\(label): a driver did not finish")
        return
    }
    try #require(ours.count == cases.count && stock.count == cases.count, "\(ours.count) and \(stock.count) lines")
    var differences = 0
    for (i, c) in cases.enumerated() where ours[i] != stock[i] {
        differences += 1
        if differences <= 12 {
            Issue.record("\(label) case \(i + 1): \(c.description)\n  dlpipe: \(ours[i])\n  stock:  \(stock[i])")
        }
    }
    #expect(differences == 0, "\(differences) of \(cases.count) \(label) cases differ from liblua5.4")
}

/// dlpipe's pattern matcher against Lua 5.4's own (liblua5.4, the stock string library of an
/// unsafe runtime): the same calls through both give the same values, captures and errors.
@Suite struct LuaPatternDifferentialTests {
    @Test(arguments: [UInt64(0x5EED_0001), 0x5EED_0002, 0x5EED_0003])
    func generatedCasesMatchStockLua(seed: UInt64) throws {
        var generator = PatternCaseGenerator(seed: seed)
        let cases = (0..<4000).map { _ in generator.next() }
        try expectSameAsStock(cases, "seed \(String(seed, radix: 16))")
    }

    @Test func handPickedCasesMatchStockLua() throws {
        try expectSameAsStock(handPickedPatternCases, "hand-picked")
    }

    @Test func theMatcherIsOursAndCarriesNoForeignNotice() throws {
        // The source of the matcher is the project's own (issue #35).
        let header = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/CLua/dl_lua_match.h")
        let text = try String(contentsOf: header, encoding: .utf8)
        #expect(!text.lowercased().contains("copyright"))
        #expect(text.contains("dl_pm_compile"))
    }
}
