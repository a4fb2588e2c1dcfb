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

    /// The text format of the value, nil for NULL.
    var encoded: String? {
        switch self {
        case .null: nil
        case .text(let text): text
        case .int(let number): String(number)
        case .double(let number): String(number)
        case .bool(let flag): flag ? "t" : "f"
        case .bytes(let bytes): PostgresValue.hex(bytes)
        case .textArray(let items): PostgresValue.arrayLiteral(items)
        case .intArray(let items): "{" + items.map(String.init).joined(separator: ",") + "}"
        case .bytesArray(let items): PostgresValue.arrayLiteral(items.map(PostgresValue.hex))
        }
    }

    /// bytea's hex input form: \x then two hex digits a byte.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8](repeating: 0, count: 2 + bytes.count * 2)
        out[0] = UInt8(ascii: "\\")
        out[1] = UInt8(ascii: "x")
        for (index, byte) in bytes.enumerated() {
            out[2 + index * 2] = digits[Int(byte >> 4)]
            out[3 + index * 2] = digits[Int(byte & 15)]
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// An array literal, every element quoted (so commas, braces, spaces and
    /// the word NULL inside a value stay data): `{"a","b\"c",NULL}`.
    static func arrayLiteral(_ items: [String?]) -> String {
        var literal = "{"
        for (index, item) in items.enumerated() {
            if index > 0 { literal += "," }
            guard let item else {
                literal += "NULL"
                continue
            }
            literal += "\""
            for character in item.unicodeScalars {
                if character == "\"" || character == "\\" { literal += "\\" }
                literal.unicodeScalars.append(character)
            }
            literal += "\""
        }
        return literal + "}"
    }
}
