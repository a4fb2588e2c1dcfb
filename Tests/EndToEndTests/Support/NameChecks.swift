import Foundation
import TestSupport

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

    /// Why `name` is not a clean file name, or nil (`CleanName`, shared with
    /// the unit tests and the fuzz targets).
    static func problem(_ name: [UInt8]) -> String? { CleanName.problem(name) }

    /// Why printed text (stderr lines, JSON Lines) could mislead a terminal, or
    /// nil: only newlines may be raw control characters.
    static func outputProblem(_ text: String) -> String? {
        guard let bad = text.unicodeScalars.first(where: { $0 != "\n" && CleanName.isHidden($0) }) else { return nil }
        return "raw U+\(String(bad.value, radix: 16)) printed"
    }
}
