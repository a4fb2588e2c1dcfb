import Foundation
import Testing

@testable import DLPipe
@testable import DLPipeLua

/// Every number that crosses from Lua is checked against the range api.lua
/// writes next to its key, at the script's line: NaN, infinities, 1e300, 2^63,
/// fractions where a count is wanted. (Such values once reached a Swift
/// conversion to Int, which trapped and killed the process, exit 132.)
@Suite struct NumberRangeTests {
    /// One ranged key: its name, its range and whether it wants a whole number.
    struct Ranged: CustomStringConvertible {
        var key: String
        var low: Double
        var high: Double?
        var above: Bool
        var integer: Bool
        var unit: String?
        var description: String { key }
    }

    /// The ranged keys of `defs.fields[section]`, and the number-typed keys without one.
    static func ranged(_ section: String) throws -> (ranged: [Ranged], missing: [String]) {
        let api = try APITableTests.api()
        guard case .table(let fields)? = api[LuaValue("defs")]?[LuaValue("fields")]?[LuaValue(section)] else {
            Issue.record("no defs.fields.\(section)")
            return ([], [])
        }
        var out: [Ranged] = []
        var missing: [String] = []
        for (name, def) in fields {
            guard let key = name.text, let type = def[1]?.text else { continue }
            guard case .table(let range)? = def[LuaValue("range")] else {
                if type.contains("integer") || type.contains("number") { missing.append(key) }
                continue
            }
            out.append(Ranged(
                key: key, low: range[.integer(1)]?.double ?? .nan, high: range[.integer(2)]?.double,
                above: range[LuaValue("above")]?.bool == true, integer: type.hasPrefix("integer"),
                unit: range[LuaValue("unit")]?.text))
        }
        return (out.sorted { $0.key < $1.key }, missing.sorted())
    }

    /// The values every ranged key must refuse, as Lua source.
    static func refused(_ r: Ranged) -> [String] {
        var values = ["1e300", "-1e300", "0/0", "-(0/0)", "1/0", "-1/0", "2^63", "-2^63", "{}", "true"]
        if r.key != "rate" && r.key != "speed_limit" { values.append("'7'") }  // these take "500K" too
        values.append(r.above ? lua(r.low) : lua(r.low - 1))
        if let high = r.high { values.append(lua(high + (r.integer ? 1 : 0.5))) } else { values.append("math.maxinteger + 1.0") }
        if r.integer { values.append(lua(r.low + 0.5)) }
        return values
    }

    /// The values every ranged key must take.
    static func taken(_ r: Ranged) -> [String] {
        var values = [r.above ? lua(r.low + 0.5) : lua(r.low)]
        if let high = r.high { values.append(lua(high)) } else { values.append("math.maxinteger") }
        if !r.integer { values.append(lua(r.low + 0.25)) }
        return values
    }

    static func lua(_ x: Double) -> String { x == x.rounded() && abs(x) < 1e15 ? String(Int64(x)) : String(x) }

    func host() throws -> ScriptHost {
        try ScriptHost(unsafe: false, memoryLimit: 64 << 20, budget: 2, vars: [:], log: { _ in })
    }

    /// The error of running `source` as the job's top level, or nil when it ran.
    func error(of source: String, in host: ScriptHost) -> String? {
        do {
            try host.runtime.run(source, chunkName: "=job.lua")
            return nil
        } catch {
            return error.message
        }
    }

    @Test func everyNumberOfConfigAndAddHasARange() throws {
        for section in ["config", "add"] {
            let missing = try Self.ranged(section).missing
            #expect(missing.isEmpty, "api.lua: defs.fields.\(section) \(missing) take numbers but have no `range = { low, high }` next to them")
        }
    }

    @Test func configRefusesEveryValueOutsideItsRangeAtItsLine() throws {
        let keys = try Self.ranged("config").ranged
        #expect(keys.count >= 9)
        for r in keys {
            for value in Self.refused(r) {
                let message = error(of: "-- line 1\ndl.config{ \(r.key) = \(value) }", in: try host())
                // A string or table is refused by type (rate takes strings: Swift reads those).
                let ranged = "job.lua:2: dl.config: \(r.key) wants "
                let typed = "job.lua:2: config key '\(r.key)' wants a number"
                #expect(message?.hasPrefix(ranged) == true || message?.hasPrefix(typed) == true,
                        "\(r.key) = \(value): \(message ?? "taken")")
                if value == "1e300" { #expect(message == "\(ranged)\(range(r)), not 1e+300", "\(message ?? "")") }
            }
            for value in Self.taken(r) {
                let host = try host()
                #expect(error(of: "dl.config{ \(r.key) = \(value) }", in: host) == nil, "\(r.key) = \(value)")
                // And Swift reads it without a trap, by the same bounds.
                #expect(throws: Never.self, "\(r.key) = \(value)") { try JobSettings(host.config()) }
            }
        }
    }

    @Test func addRefusesEveryValueOutsideItsRangeAtItsLine() throws {
        let fields = try Self.ranged("add").ranged
        #expect(fields.map(\.key) == ["max_size", "max_time", "priority", "speed_limit", "speed_time", "split", "timeout"])
        for r in fields {
            for value in Self.refused(r) {
                let message = error(of: "-- line 1\ndl.add{ url = 'http://h/x', \(r.key) = \(value) }", in: try host())
                #expect(message?.hasPrefix("job.lua:2: dl.add: \(r.key) wants \(range(r)), not ") == true,
                        "\(r.key) = \(value): \(message ?? "taken")")
            }
            for value in Self.taken(r) {
                let host = try host()
                #expect(error(of: "dl.add{ url = 'http://h/x', \(r.key) = \(value) }", in: host) == nil, "\(r.key) = \(value)")
                let request = try #require(host.topLevel?.requests().first { _ in true })
                #expect((-1_000_000_000...1_000_000_000).contains(request.priority))
                #expect(request.timeout.map { $0 > 0 && $0 <= 86_400 } ?? true)
                #expect(request.maxSize.map { $0 >= 1 } ?? true)
            }
        }
    }

    /// What a range wants, as the messages word it.
    func range(_ r: Ranged) -> String {
        let low = Self.lua(r.low), high = r.high.map(Self.lua)
        if r.integer {
            let unit = r.unit.map { " of \($0)" } ?? ""
            return "a whole number\(unit) from \(low)" + (high.map { " to \($0)" } ?? "")
        }
        return r.above ? "a number of seconds above \(low), at most \(high ?? "")"
            : "a number of seconds from \(low) to \(high ?? "")"
    }

    /// JobSettings, which reads the table Swift gets, keeps the bounds api.lua
    /// writes, and no value traps it (it read 1e300 with Int64(_:)).
    @Test func jobSettingsKeepsTheSameBoundsAndNeverTraps() throws {
        for r in try Self.ranged("config").ranged {
            let wrapped: (Double) -> LuaValue = { r.integer && $0 == $0.rounded() && abs($0) < 1e18 ? .integer(Int64($0)) : .number($0) }
            let low = r.above ? r.low + 0.5 : r.low
            #expect(throws: Never.self, "\(r.key) = \(low)") { try JobSettings([r.key: wrapped(low)]) }
            if let high = r.high {
                #expect(throws: Never.self, "\(r.key) = \(high)") { try JobSettings([r.key: wrapped(high)]) }
                #expect(throws: ScriptError.self, "\(r.key) above") { try JobSettings([r.key: wrapped(high + 1)]) }
            }
            #expect(throws: ScriptError.self, "\(r.key) below") { try JobSettings([r.key: wrapped(r.above ? r.low : r.low - 1)]) }
            for hostile in [1e300, -1e300, .nan, .infinity, -.infinity, 0x1p63, -0x1p63] {
                #expect(throws: ScriptError.self, "\(r.key) = \(hostile)") { try JobSettings([r.key: .number(hostile)]) }
            }
        }
    }

    /// `-Int.min` trapped in ProvisionalIDs.row(of:), behind dl.cancel(math.mininteger).
    @Test func theSmallestIntegerNamesNoRow() {
        var ids = ProvisionalIDs()
        ids.commandLine = true
        _ = ids.id(ofPosition: 1)
        ids.queued([41])
        #expect(ids.row(of: Int.min) == nil)
        #expect(ids.row(of: -1) == 41)
        #expect(ids.row(of: -2) == nil)
    }
}
