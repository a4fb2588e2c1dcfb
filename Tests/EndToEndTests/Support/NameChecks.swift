import Foundation

/// Checks on file names and printed output that must hold whatever a server sends.
enum NameChecks {
    /// The entries of a directory as raw bytes (no decoding that could hide bad
    /// UTF-8), without "." and "..".
    static func rawEntries(_ directory: String) -> [[UInt8]] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [[UInt8]] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if name != [0x2E] && name != [0x2E, 0x2E] { names.append(name) }
        }
        return names
    }

    /// Why `name` is not a clean file name, or nil: valid UTF-8 in NFC, at most
    /// 255 bytes, no separator, no leading dot, no control, bidi or invisible character.
    static func problem(_ name: [UInt8]) -> String? {
        guard let text = String(validating: name, as: UTF8.self) else { return "not UTF-8: \(name)" }
        if name.isEmpty || name.count > 255 { return "\(name.count) bytes" }
        if name.first == 0x2E { return "leading dot: \(text.debugDescription)" }
        if name.contains(0x2F) || name.contains(0x5C) { return "separator in \(text.debugDescription)" }
        if let bad = text.unicodeScalars.first(where: isHostile) {
            return "U+\(String(bad.value, radix: 16)) in \(text.debugDescription)"
        }
        if Array(text.precomposedStringWithCanonicalMapping.utf8) != name { return "not NFC: \(text.debugDescription)" }
        return nil
    }

    /// Characters that must never reach a file name or a terminal: C0, DEL, C1,
    /// bidi controls, zero-width and line/paragraph separators.
    static func isHostile(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x061C, 0x200B...0x200F, 0x2028...0x202E, 0x2060...0x2069, 0xFEFF: true
        default: false
        }
    }

    /// Why printed text (stderr lines, JSON Lines) could mislead a terminal, or
    /// nil: only newlines may be raw control characters.
    static func outputProblem(_ text: String) -> String? {
        guard let bad = text.unicodeScalars.first(where: { $0 != "\n" && isHostile($0) }) else { return nil }
        return "raw U+\(String(bad.value, radix: 16)) printed"
    }
}
