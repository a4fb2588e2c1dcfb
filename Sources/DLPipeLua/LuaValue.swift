/// A Lua value copied into Swift. `.nil_` is Lua's nil (spelled with an underscore so it
/// never reads as Swift's `nil`; a missing value in an Optional is still Swift `nil`).
public indirect enum LuaValue: Hashable, Sendable {
    /// Lua nil.
    case nil_
    /// A Lua boolean.
    case boolean(Bool)
    /// A Lua integer (subtype of number).
    case integer(Int64)
    /// A Lua float.
    case number(Double)
    /// A Lua string: bytes, which may hold NUL and invalid UTF-8.
    case string([UInt8])
    /// A Lua table, converted recursively (depth limit 32; a table met a second time becomes `.opaque("table")`).
    case table([LuaValue: LuaValue])
    /// A Lua function kept alive in the registry, callable later with `LuaRuntime.call`.
    case function(LuaFunctionRef)
    /// A value Swift cannot hold (userdata, thread, or a table cut by the depth/cycle rules): its type name.
    case opaque(String)

    /// The deepest table nesting converted in either direction; deeper tables are cut.
    public static let maxDepth = 32

    /// A Lua string holding the UTF-8 bytes of `s`.
    public init(_ s: String) { self = .string(Array(s.utf8)) }

    /// A table with keys 1...n holding `items` (a Lua sequence).
    public static func array(_ items: [LuaValue]) -> LuaValue {
        var table: [LuaValue: LuaValue] = [:]
        for (i, item) in items.enumerated() where item != .nil_ { table[.integer(Int64(i + 1))] = item }
        return .table(table)
    }

    /// The string decoded as UTF-8 (invalid bytes replaced); nil for non-strings (numbers are not coerced).
    public var text: String? {
        if case .string(let bytes) = self { return String(decoding: bytes, as: UTF8.self) }
        return nil
    }

    /// The integer, or a float with an exact integer value (as Lua converts them); nil otherwise.
    public var int: Int64? {
        switch self {
        case .integer(let i): return i
        case .number(let d): return Int64(exactly: d)
        default: return nil
        }
    }

    /// The number as a Double (integers converted); nil for non-numbers.
    public var double: Double? {
        switch self {
        case .integer(let i): return Double(i)
        case .number(let d): return d
        default: return nil
        }
    }

    /// The boolean; nil for non-booleans (use `isTruthy` for Lua's truth test).
    public var bool: Bool? {
        if case .boolean(let b) = self { return b }
        return nil
    }

    /// Lua truthiness: everything except nil and false is true.
    public var isTruthy: Bool { self != .nil_ && self != .boolean(false) }

    /// True for Lua nil.
    public var isNil: Bool { self == .nil_ }

    /// For a table whose keys are exactly 1...n, the values in order (an empty table gives []); nil otherwise.
    public var array: [LuaValue]? {
        guard case .table(let t) = self else { return nil }
        var items: [LuaValue] = []
        items.reserveCapacity(t.count)
        for i in 0..<t.count {
            guard let v = t[.integer(Int64(i + 1))] else { return nil }
            items.append(v)
        }
        return items
    }

    /// For tables, the value under the string key (nil when absent); nil for non-tables.
    public subscript(key: String) -> LuaValue? {
        guard case .table(let t) = self else { return nil }
        return t[LuaValue(key)]
    }

    /// For tables, the value under the integer key (nil when absent); nil for non-tables.
    public subscript(index: Int) -> LuaValue? {
        guard case .table(let t) = self else { return nil }
        return t[.integer(Int64(index))]
    }
}

extension LuaValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// A string literal becomes a Lua string.
    public init(stringLiteral value: String) { self.init(value) }
    /// An integer literal becomes a Lua integer.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// A float literal becomes a Lua float.
    public init(floatLiteral value: Double) { self = .number(value) }
    /// A boolean literal becomes a Lua boolean.
    public init(booleanLiteral value: Bool) { self = .boolean(value) }
    /// An array literal becomes a Lua sequence.
    public init(arrayLiteral elements: LuaValue...) { self = .array(elements) }
    /// A dictionary literal becomes a Lua table (later duplicates win).
    public init(dictionaryLiteral elements: (LuaValue, LuaValue)...) {
        self = .table(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension LuaValue: CustomStringConvertible {
    /// A short, Lua-like rendering for logs and test failures.
    public var description: String {
        switch self {
        case .nil_: return "nil"
        case .boolean(let b): return b ? "true" : "false"
        case .integer(let i): return String(i)
        case .number(let d): return String(d)
        case .string: return "\"" + (text ?? "") + "\""
        case .table(let t):
            return "{" + t.map { "[\($0.key)]=\($0.value)" }.sorted().joined(separator: ", ") + "}"
        case .function: return "function"
        case .opaque(let name): return "<\(name)>"
        }
    }
}
