/// The groups of a robots.txt file (RFC 9309 2.1): one or more `user-agent`
/// lines, then the rules until the next `user-agent` line that follows a
/// rule. Rules before the first `user-agent` belong to no group; unknown
/// keys (`sitemap`, ...) and lines without a colon are ignored, as the RFC
/// asks of a parser that meets mistakes.
struct RobotsGroups {
    struct Group {
        /// Product tokens, lower-cased (`*` for every crawler).
        var agents: [[UInt8]] = []
        var rules: [RobotsRules.Rule] = []
        var crawlDelay: Double?
    }

    private(set) var groups: [Group] = []

    init(parsing body: some Collection<UInt8>) {
        var current: Group?
        var sawRule = false
        var bytes = Array(body)
        // A byte order mark before the first line is not part of it.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        for line in bytes.split(omittingEmptySubsequences: true, whereSeparator: { $0 == 0x0A || $0 == 0x0D }) {
            guard let (key, value) = Self.keyAndValue(line) else { continue }
            switch key {
            case "user-agent":
                if current == nil || sawRule {
                    if let done = current { groups.append(done) }
                    current = Group()
                    sawRule = false
                }
                current?.agents.append(Self.productToken(value))
            case "allow", "disallow":
                sawRule = true
                // An empty value is no rule at all (`Disallow:` allows everything).
                guard !value.isEmpty else { continue }
                current?.rules.append(RobotsRules.Rule(
                    allows: key == "allow", pattern: RobotsRules.normalise(value, isPattern: true)))
            case "crawl-delay":
                sawRule = true
                if current?.crawlDelay == nil { current?.crawlDelay = Self.seconds(value) }
            default:
                continue
            }
        }
        if let done = current { groups.append(done) }
    }

    /// The line's lower-cased key and its value, trimmed, without a comment.
    private static func keyAndValue(_ line: ArraySlice<UInt8>) -> (String, [UInt8])? {
        let content = line.prefix { $0 != UInt8(ascii: "#") }
        guard let colon = content.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let key = trimmed(content[..<colon])
        guard key.count <= 32 else { return nil }
        let name = String(decoding: key, as: UTF8.self).lowercased()
        return (name, Array(trimmed(content[content.index(after: colon)...])))
    }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }),
            let last = bytes.lastIndex(where: { !isSpace($0) })
        else { return [] }
        return bytes[first...last]
    }

    /// A `user-agent` value's product token: `*`, or its leading letters,
    /// `-` and `_` (RFC 9309 2.2.1), lower-cased; "dlpipe/1.0" names dlpipe.
    private static func productToken(_ value: [UInt8]) -> [UInt8] {
        if value.first == UInt8(ascii: "*") { return [UInt8(ascii: "*")] }
        let token = value.prefix {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0 | 0x20) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
        }
        return token.map { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 | 0x20 : $0 }
    }

    /// A non-negative decimal number of seconds; nil for anything else.
    private static func seconds(_ value: [UInt8]) -> Double? {
        guard !value.isEmpty, value.count <= 16,
            value.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: ".") }),
            let number = Double(String(decoding: value, as: UTF8.self)), number.isFinite, number >= 0
        else { return nil }
        return number
    }
}
