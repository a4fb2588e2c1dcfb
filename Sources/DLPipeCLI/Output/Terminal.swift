import Foundation
import Synchronization

/// Writing to the terminal or the log: whole lines, control characters made visible.
enum Terminal {
    /// A line on stderr.
    static func error(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// Whether stderr is a terminal (progress bars go there).
    static var stderrIsTerminal: Bool { isatty(2) == 1 }

    /// Colours only on a terminal and when NO_COLOR is unset (no-color.org).
    static var colors: Bool {
        stderrIsTerminal && (ProcessInfo.processInfo.environment["NO_COLOR"] ?? "").isEmpty
    }

    /// A message of several lines (a handler's error and its Lua traceback) as
    /// real lines: each cleaned (a traceback's leading tabs become two spaces
    /// each), and every line after the first indented by four spaces, so that
    /// no line of a message, whatever a server or script put in it, passes for
    /// one of dlpipe's own ("finished ...", "failed ...").
    static func cleanLines(_ text: String) -> String {
        let (first, rest) = cleanLinesSplit(text)
        return first + rest
    }

    /// `cleanLines`, split into the first line and the rest (empty, or a newline
    /// and the indented lines), for a caller that ends the first line with more.
    static func cleanLinesSplit(_ text: String) -> (first: String, rest: String) {
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        let rest = lines.dropFirst().map { line in
            let tabs = line.prefix(while: { $0 == "\t" }).count
            return "\n    " + String(repeating: "  ", count: tabs) + clean(String(line.dropFirst(tabs)))
        }
        return (clean(String(lines.first ?? "")), rest.joined())
    }

    /// Text from servers or users with control characters (escape sequences) escaped.
    static func clean(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0..<0x20, 0x7F..<0xA0, 0x202A...0x202E, 0x2066...0x2069:
                out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

/// Human sizes, rates and durations.
enum Format {
    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }

    static func rate(_ bytesPerSecond: Double) -> String {
        bytes(Int64(bytesPerSecond.isFinite ? bytesPerSecond : 0)) + "/s"
    }

    /// A speed from `ProgressMeter`: "--" while it has no estimate yet.
    static func speed(_ bytesPerSecond: Double?) -> String {
        bytesPerSecond.map(rate) ?? "-- B/s"
    }

    /// "ETA 4s", "ETA 1m05s": whole seconds, rounded up (a wait of 0.2 s is 1 s away).
    static func eta(_ value: Double) -> String {
        let whole = Int(min(value, 359_999).rounded(.up))
        if whole < 60 { return "ETA \(whole)s" }
        return "ETA " + seconds(Double(whole))
    }

    static func seconds(_ value: Double) -> String {
        if value < 60 { return String(format: "%.1fs", value) }
        let whole = Int(value)
        return whole < 3600
            ? String(format: "%dm%02ds", whole / 60, whole % 60)
            : String(format: "%dh%02dm", whole / 3600, whole % 3600 / 60)
    }
}

/// Standard output shared by all threads, written in whole lines (JSON Lines
/// can be thousands of events a second).
final class StandardOutput: Sendable {
    static let shared = StandardOutput()
    private let buffer = Mutex<[UInt8]>([])

    /// Lines go out at once to a pipe or terminal, where a reader waits for
    /// each event; into a regular file they are batched.
    private let batched: Bool = {
        var info = stat()
        return fstat(1, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }()

    func write(_ text: String) {
        buffer.withLock { bytes in
            bytes.append(contentsOf: text.utf8)
            if !batched || bytes.count >= 1 << 16 { Self.drain(&bytes) }
        }
    }

    func flush() { buffer.withLock { Self.drain(&$0) } }

    private static func drain(_ bytes: inout [UInt8]) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(1, $0.baseAddress! + done, $0.count - done) }
            if n <= 0 { break }
            done += n
        }
        bytes.removeAll(keepingCapacity: true)
    }
}
