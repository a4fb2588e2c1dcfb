/// The range api.lua writes next to a number key of `dl.config` or `dl.add`,
/// as Swift reads it: JobSettings and `__dl.add` keep the bounds the prelude
/// checked from the same table, so that no value, however it came, traps a
/// conversion, and a bound is written in one place.
struct APIRange: Sendable {
    var low: Double
    /// nil: no bound but a Lua integer's.
    var high: Double?
    /// `low` itself is refused.
    var above: Bool
    /// Whether the key wants a whole number ("integer" in its type).
    var integer: Bool
    /// The unit the messages name ("bytes per second").
    var unit: String?

    func contains(_ value: Double) -> Bool {
        guard value.isFinite else { return false }
        guard above ? value > low : value >= low else { return false }
        return high.map { value <= $0 } ?? true
    }

    /// An exact check of a whole number: the bounds compared as Int64 where
    /// they are integers, so 2^63 - 1 is not rounded into range.
    func contains(_ value: Int64) -> Bool {
        guard let low = Int64(exactly: low), high.map({ Int64(exactly: $0) != nil }) ?? true else {
            return contains(Double(value))
        }
        guard above ? value > low : value >= low else { return false }
        return high.flatMap { Int64(exactly: $0) }.map { value <= $0 } ?? true
    }

    /// What the range wants, worded as the prelude's `range_text`:
    /// "a whole number from 1 to 1000", "a number of seconds above 0, at most 86400".
    var text: String {
        func shown(_ x: Double) -> String { Int64(exactly: x).map(String.init) ?? "\(x)" }
        let lowText = shown(low), highText = high.map(shown)
        if integer {
            return "a whole number" + (unit.map { " of \($0)" } ?? "") + " from \(lowText)" + (highText.map { " to \($0)" } ?? "")
        }
        if above { return "a number of seconds above \(lowText)" + (highText.map { ", at most \($0)" } ?? "") }
        return "a number of seconds from \(lowText)" + (highText.map { " to \($0)" } ?? "")
    }
}

/// The ranges of api.lua's `defs.fields.config` and `defs.fields.add`, read
/// once per process from the compiled-in api.lua. A key Swift reads as a
/// number has one (NumberRangeTests); a missing one is refused as out of range.
enum APIRanges {
    static let config = load("config")
    static let add = load("add")

    private static func load(_ name: String) -> [String: APIRange] {
        let runtime = LuaRuntime(memoryLimit: 16 << 20, unsafe: false)
        guard let api = try? runtime.run(Prelude.api, chunkName: Prelude.apiChunkName).first,
            case .table(let fields)? = api["defs"]?["fields"]?[name]
        else { preconditionFailure("api.lua has no defs.fields.\(name)") }
        var out: [String: APIRange] = [:]
        for (key, def) in fields {
            guard let key = key.text, let type = def[1]?.text, let range = def["range"], let low = range[1]?.double
            else { continue }
            out[key] = APIRange(
                low: low, high: range[2]?.double, above: range["above"]?.bool == true,
                integer: type.hasPrefix("integer"), unit: range["unit"]?.text)
        }
        return out
    }
}
