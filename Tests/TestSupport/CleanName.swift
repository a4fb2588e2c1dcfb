import Foundation

/// What a clean file name is, wherever a test or a fuzz target checks one (a
/// name from SafeName, a file the engine wrote, a name printed): valid UTF-8
/// in NFC, 1 to 255 bytes, no separator, no leading dot (so neither "." nor
/// ".."), and no character that hides, reorders or breaks text: controls (C0,
/// DEL, C1), bidi controls, line and paragraph separators, and format
/// characters that render as nothing (Cf and Default_Ignorable).
///
/// Self-contained on purpose: scripts/fuzz compiles this file into the naming
/// fuzz targets beside the engine's sources.
public enum CleanName {
    /// Why `name` is not a clean file name, or nil.
    public static func problem(_ name: [UInt8]) -> String? {
        guard let text = String(validating: name, as: UTF8.self) else { return "not UTF-8: \(name)" }
        if name.isEmpty || name.count > 255 { return "\(name.count) bytes: \(text.debugDescription)" }
        if name.first == 0x2E { return "leading dot: \(text.debugDescription)" }
        if name.contains(0x2F) || name.contains(0x5C) { return "separator in \(text.debugDescription)" }
        if let bad = text.unicodeScalars.first(where: isHidden) {
            return "U+\(String(bad.value, radix: 16)) in \(text.debugDescription)"
        }
        // The standard library's NFC: Foundation's leaves some sequences
        // unnormalised (U+AC00 U+11A8 stays as it is; NFC is U+AC01).
        if text._nfcCodeUnits != name { return "not NFC: \(text.debugDescription)" }
        return nil
    }

    /// Why `name` is not a clean file name, or nil.
    public static func problem(_ name: String) -> String? { problem(Array(name.utf8)) }

    /// Characters that must never reach a file name or a terminal: they hide,
    /// reorder or break the text around them.
    public static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        if (0x20...0x7E).contains(scalar.value) { return false }
        let properties = scalar.properties
        switch properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator: return true
        case .format: return properties.isDefaultIgnorableCodePoint || properties.isBidiControl
        default: return properties.isBidiControl
        }
    }
}
