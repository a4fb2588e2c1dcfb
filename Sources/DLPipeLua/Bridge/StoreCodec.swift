import Foundation

/// `dl.store` values as JSON text, tagged so that a value comes back exactly as
/// it went in: ["i", 5], ["n", 1.5], ["b", true], ["s", "text"], ["x", base64]
/// for strings that are not UTF-8, and ["t", [[key, value], ...]] for tables.
enum StoreCodec {
    /// Why a value cannot be stored.
    struct Unstorable: Error { let message: String }

    static func encode(_ value: LuaValue, depth: Int = 0) throws(Unstorable) -> Any {
        guard depth < 32 else { throw Unstorable(message: "tables nested too deeply") }
        switch value {
        case .integer(let n): return ["i", n]
        case .number(let d):
            guard d.isFinite else { throw Unstorable(message: "numbers must be finite") }
            return ["n", d]
        case .boolean(let b): return ["b", b]
        case .string(let bytes):
            if let text = String(validating: bytes, as: UTF8.self) { return ["s", text] }
            return ["x", Data(bytes).base64EncodedString()]
        case .table(let table):
            var pairs: [Any] = []
            for (key, item) in table {
                pairs.append([try encode(key, depth: depth + 1), try encode(item, depth: depth + 1)])
            }
            return ["t", pairs]
        case .nil_: return ["z"]
        case .function, .opaque:
            throw Unstorable(message: "only strings, numbers, booleans and tables of them can be stored")
        }
    }

    static func decode(_ any: Any) -> LuaValue {
        guard let pair = any as? [Any], let tag = pair.first as? String else { return .nil_ }
        let payload = pair.count > 1 ? pair[1] : nil
        switch tag {
        case "i": return (payload as? NSNumber).map { .integer($0.int64Value) } ?? .nil_
        case "n": return (payload as? NSNumber).map { .number($0.doubleValue) } ?? .nil_
        case "b": return (payload as? Bool).map { .boolean($0) } ?? .nil_
        case "s": return (payload as? String).map { LuaValue($0) } ?? .nil_
        case "x": return (payload as? String).flatMap { Data(base64Encoded: $0) }.map { .string([UInt8]($0)) } ?? .nil_
        case "t":
            var table: [LuaValue: LuaValue] = [:]
            for entry in payload as? [Any] ?? [] {
                guard let kv = entry as? [Any], kv.count == 2 else { continue }
                let key = decode(kv[0])
                if !key.isNil { table[key] = decode(kv[1]) }
            }
            return .table(table)
        default: return .nil_
        }
    }

    static func text(_ value: LuaValue) throws(Unstorable) -> String {
        let object = try encode(value)
        guard let data = try? JSONSerialization.data(withJSONObject: object) else {
            throw Unstorable(message: "the value cannot be written")
        }
        return String(decoding: data, as: UTF8.self)
    }

    static func value(_ text: String) -> LuaValue {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) else { return .nil_ }
        return decode(object)
    }
}
