import Foundation

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

    /// A script's log line (dl.log, dl.warn, print): each line of it cleaned
    /// but its tabs kept (dl.log separates its arguments with them), and the
    /// lines after the first indented, so a "\n" in a title never makes a
    /// line that passes for one of dlpipe's own.
    static func scriptLines(_ text: String) -> String {
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        return lines.map { clean(String($0), keepingTabs: true) }.joined(separator: "\n    ")
    }

    /// Text from servers or users with control characters (escape sequences) escaped.
    static func clean(_ text: String, keepingTabs: Bool = false) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x09 where keepingTabs:
                out.unicodeScalars.append(scalar)
            case 0..<0x20, 0x7F..<0xA0, 0x202A...0x202E, 0x2066...0x2069:
                out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
