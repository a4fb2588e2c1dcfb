/// Extracts the raw (unsanitised) filename from a Content-Disposition header value (RFC 6266).
///
/// The parser is deliberately lenient, like browsers: it never fails, only returns nil.
/// Its output is untrusted and must go through `SafeName.sanitize` before touching disk.
enum ContentDisposition {
    /// Returns the filename, preferring a valid `filename*` (RFC 8187) over `filename`.
    static func filename(from value: String) -> String? {
        let params = parameters(Array(value.unicodeScalars))
        // Only the first occurrence of each name counts; duplicates are invalid per RFC 6266.
        if let ext = params.first(where: { $0.name == "filename*" }),
           let decoded = decodeExtValue(ext.value), !decoded.isEmpty {
            return decoded
        }
        if let plain = params.first(where: { $0.name == "filename" }), !plain.value.isEmpty {
            return plain.value
        }
        return nil
    }

    /// Decodes raw header bytes (UTF-8 if valid, else ISO-8859-1) and parses them.
    static func filename(fromBytes bytes: [UInt8]) -> String? {
        filename(from: decodeUTF8OrLatin1(bytes))
    }

    /// Decodes bytes as UTF-8 when valid, otherwise as ISO-8859-1 (which accepts every byte).
    static func decodeUTF8OrLatin1(_ bytes: some Collection<UInt8>) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: bytes.map { Unicode.Scalar($0) })
        return String(view)
    }

    /// The value of an ASCII hex digit, or nil.
    static func hexValue(_ scalar: Unicode.Scalar) -> UInt8? {
        switch scalar.value {
        case 0x30...0x39: UInt8(scalar.value - 0x30)
        case 0x41...0x46: UInt8(scalar.value - 0x41 + 10)
        case 0x61...0x66: UInt8(scalar.value - 0x61 + 10)
        default: nil
        }
    }

    /// One `name=value` pair, name lowercased (ASCII), value unquoted.
    private struct Parameter {
        /// ASCII-lowercased, trimmed parameter name.
        let name: String
        /// Unquoted value (escapes resolved) or trimmed token.
        let value: String
    }

    /// Splits the header into parameters; items without `=` (the disposition type, junk) are skipped.
    private static func parameters(_ s: [Unicode.Scalar]) -> [Parameter] {
        var result: [Parameter] = []
        var i = 0
        while i < s.count {
            var name = String.UnicodeScalarView()
            while i < s.count, s[i] != "=", s[i] != ";" { name.append(s[i]); i += 1 }
            guard i < s.count, s[i] == "=" else { i += 1; continue }
            i += 1
            while i < s.count, s[i].properties.isWhitespace { i += 1 }
            var value = String.UnicodeScalarView()
            let quoted = i < s.count && s[i] == "\""
            if quoted {
                i += 1
                while i < s.count, s[i] != "\"" {
                    // A quoted-pair (RFC 9110 §5.6.4): a backslash takes the next character
                    // literally, whatever it is, so "f\oo.html" is foo.html and "%\41" is %41.
                    // Unescaped here, before SafeName cuts at separators: an unescaped Windows
                    // path ("C:\x\y.txt") thus loses its backslashes and stays one name
                    // ("C:xy.txt"), which is what the header says; only "\\" leaves a separator.
                    if s[i] == "\\", i + 1 < s.count { i += 1 }
                    value.append(s[i])
                    i += 1
                }
                // An unterminated quote just runs to the end; junk after the closing quote is ignored.
                while i < s.count, s[i] != ";" { i += 1 }
            } else {
                // Token, or (like browsers) an unquoted value with spaces, up to the next ';'.
                while i < s.count, s[i] != ";" { value.append(s[i]); i += 1 }
            }
            i += 1
            let text = quoted ? String(value) : trimmed(value)
            result.append(Parameter(name: asciiLowercased(trimmed(name)), value: text))
        }
        return result
    }

    /// Decodes an RFC 8187 ext-value `charset'lang'pct-encoded`; nil if malformed or charset unknown.
    private static func decodeExtValue(_ value: String) -> String? {
        let parts = value.unicodeScalars.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let charset = asciiLowercased(trimmed(String.UnicodeScalarView(parts[0])))
        let encoded = Array(parts[2])
        var bytes: [UInt8] = []
        var latin1 = String.UnicodeScalarView()
        var i = 0
        while i < encoded.count {
            let scalar = encoded[i]
            if scalar == "%" {
                // Invalid percent-encoding makes the whole filename* unusable (fall back to filename).
                guard i + 2 < encoded.count, let hi = hexValue(encoded[i + 1]),
                      let lo = hexValue(encoded[i + 2]) else { return nil }
                let byte = hi << 4 | lo
                bytes.append(byte)
                latin1.append(Unicode.Scalar(byte))
                i += 3
            } else {
                bytes.append(contentsOf: String(scalar).utf8)
                latin1.append(scalar)
                i += 1
            }
        }
        switch charset {
        case "utf-8": return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1": return String(latin1)
        default: return nil
        }
    }

    /// Trims Unicode whitespace at both ends.
    private static func trimmed(_ view: String.UnicodeScalarView) -> String {
        let scalars = Array(view)
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        var out = String.UnicodeScalarView()
        out.append(contentsOf: scalars[first...last])
        return String(out)
    }

    /// Lowercases A-Z only, so odd Unicode case mappings cannot make a name match `filename`.
    private static func asciiLowercased(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let v = scalar.value
            out.append((0x41...0x5A).contains(v) ? Unicode.Scalar(UInt8(v + 0x20)) : scalar)
        }
        return String(out)
    }
}
