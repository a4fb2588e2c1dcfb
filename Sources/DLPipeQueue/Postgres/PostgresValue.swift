import DLPipe
import Foundation

/// A statement parameter, sent in PostgreSQL's text format (the server
/// converts it to the column's type). Arrays let one statement carry a batch
/// (`unnest($1::text[], ...)`).
package enum PostgresValue: Sendable, Equatable {
    case null
    case text(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    /// `bytea`: any bytes, NUL included (text cannot hold NUL in PostgreSQL).
    case bytes([UInt8])
    case textArray([String?])
    case intArray([Int64])
    case bytesArray([[UInt8]])

    /// The text format of the value as UTF-8 bytes, nil for NULL. Built a
    /// byte at a time, not as a String: a batch's arrays (a report's ids, a
    /// state write's twenty columns) were a tenth of a queue worker's CPU
    /// when every character went through String's append.
    var encoded: [UInt8]? {
        switch self {
        case .null: return nil
        case .text(let text): return Array(text.utf8)
        case .int(let number): return Array(String(number).utf8)
        case .double(let number): return Array(String(number).utf8)
        case .bool(let flag): return [UInt8(ascii: flag ? "t" : "f")]
        case .bytes(let bytes):
            var out: [UInt8] = []
            out.reserveCapacity(2 + bytes.count * 2)
            PostgresValue.appendHex(bytes, to: &out, escaped: false)
            return out
        case .textArray(let items):
            var out: [UInt8] = []
            out.reserveCapacity(2 + items.reduce(0) { $0 + 3 + ($1?.utf8.count ?? 4) })
            PostgresValue.appendArray(items.count, to: &out) { index, out in
                guard let item = items[index] else { return false }
                for byte in item.utf8 {
                    // UTF-8 never puts these two bytes inside a longer character.
                    if byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\"") { out.append(UInt8(ascii: "\\")) }
                    out.append(byte)
                }
                return true
            }
            return out
        case .intArray(let items):
            return Array(("{" + items.map(String.init).joined(separator: ",") + "}").utf8)
        case .bytesArray(let items):
            var out: [UInt8] = []
            out.reserveCapacity(2 + items.reduce(0) { $0 + 6 + $1.count * 2 })
            PostgresValue.appendArray(items.count, to: &out) { index, out in
                PostgresValue.appendHex(items[index], to: &out, escaped: true)
                return true
            }
            return out
        }
    }

    /// bytea's hex input form: \x then two hex digits a byte (the backslash
    /// doubled inside a quoted array element).
    private static func appendHex(_ bytes: [UInt8], to out: inout [UInt8], escaped: Bool) {
        if escaped { out.append(UInt8(ascii: "\\")) }
        out.append(UInt8(ascii: "\\"))
        out.append(UInt8(ascii: "x"))
        for byte in bytes {
            out.append(hexDigit(byte >> 4))
            out.append(hexDigit(byte & 15))
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    /// An array literal, every element quoted (so commas, braces, spaces and
    /// the word NULL inside a value stay data): `{"a","b\"c",NULL}`.
    /// `element` writes the inside of element `index` and returns false for NULL.
    private static func appendArray(_ count: Int, to out: inout [UInt8], _ element: (Int, inout [UInt8]) -> Bool) {
        out.append(UInt8(ascii: "{"))
        for index in 0..<count {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            let start = out.count
            out.append(UInt8(ascii: "\""))
            if element(index, &out) {
                out.append(UInt8(ascii: "\""))
            } else {
                out.removeSubrange(start...)
                out.append(contentsOf: "NULL".utf8)
            }
        }
        out.append(UInt8(ascii: "}"))
    }
}
