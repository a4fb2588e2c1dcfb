/// The rules of one robots.txt for dlpipe, by RFC 9309: the groups that name
/// dlpipe's product token (or, when none does, the `*` groups), merged; the
/// longest matching pattern decides, and `Allow` wins a tie. Pure and total:
/// any bytes parse (past `parseLimit` they are ignored), and matching is
/// bounded by the pattern and path lengths.
package struct RobotsRules: Equatable, Sendable {
    struct Rule: Equatable, Sendable {
        let allows: Bool
        /// The normalised pattern (`normalise`), `*` and a final `$` still special.
        let pattern: [UInt8]
    }

    /// The rules that apply to dlpipe, in file order.
    let rules: [Rule]
    /// Crawl-delay in seconds of the group that applies, when it gave a valid one.
    package let crawlDelay: Double?

    /// RFC 9309 asks crawlers to parse at least 500 KiB; the rest is ignored.
    package static let parseLimit = 500 * 1024
    /// The product token robots.txt groups name dlpipe by.
    package static let productToken = "dlpipe"

    /// Every path may be fetched (no robots.txt: a 4xx).
    package static let allowAll = RobotsRules(rules: [], crawlDelay: nil)
    /// No path may be fetched (robots.txt unreachable: a 5xx or a network failure).
    package static let disallowAll = RobotsRules(rules: [Rule(allows: false, pattern: Array("/".utf8))], crawlDelay: nil)

    init(rules: [Rule], crawlDelay: Double?) {
        self.rules = rules
        self.crawlDelay = crawlDelay
    }

    /// Parses a robots.txt body for the agent `token` (case-insensitive).
    package init(parsing body: some Collection<UInt8>, for token: String = RobotsRules.productToken) {
        let groups = RobotsGroups(parsing: body.prefix(Self.parseLimit))
        let wanted = Array(token.lowercased().utf8)
        var named = groups.groups.filter { $0.agents.contains(wanted) }
        if named.isEmpty { named = groups.groups.filter { $0.agents.contains(Array("*".utf8)) } }
        rules = named.flatMap(\.rules)
        crawlDelay = named.lazy.compactMap(\.crawlDelay).first
    }

    /// Whether the path (with its query) of `url` may be fetched.
    package func allows(url: String) -> Bool {
        allows(path: Self.pathAndQuery(of: url))
    }

    /// Whether a path (with its query, as sent in the request line) may be fetched.
    package func allows(path: String) -> Bool {
        let normalised = Self.normalise(Array(path.utf8), isPattern: false)
        // The file itself is always allowed (RFC 9309 2.2.2).
        if normalised == Array("/robots.txt".utf8) { return true }
        var best: (length: Int, allows: Bool)?
        for rule in rules where rule.pattern.count >= best?.length ?? 0 {
            guard RobotsMatch.matches(rule.pattern, normalised) else { continue }
            if let current = best, current.length == rule.pattern.count {
                best = (current.length, current.allows || rule.allows)
            } else {
                best = (rule.pattern.count, rule.allows)
            }
        }
        return best?.allows ?? true
    }

    /// The path and query of an absolute URL ("/" when it has no path).
    package static func pathAndQuery(of url: String) -> String {
        var rest = Substring(url).prefix { $0 != "#" }
        // After the scheme's "://" (the first ":" of an absolute URL).
        if let colon = rest.firstIndex(of: ":"), rest[colon...].hasPrefix("://") {
            rest = rest[rest.index(colon, offsetBy: 3)...]
        }
        guard let start = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) else { return "/" }
        let path = rest[start...]
        return path.first == "?" ? "/" + path : String(path)
    }

    /// RFC 9309 2.2.2's form for comparison: a percent-encoded unreserved
    /// character is decoded, other escapes get upper-case hex, and octets
    /// outside printable US-ASCII are percent-encoded. In a path, `*` and `$`
    /// are plain characters; in a pattern they stay special.
    static func normalise(_ bytes: [UInt8], isPattern: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            {
                let decoded = high << 4 | low
                if isUnreserved(decoded) {
                    out.append(decoded)
                } else {
                    out.append(contentsOf: [byte, hexDigit(high), hexDigit(low)])
                }
                index += 3
                continue
            }
            if byte <= 0x20 || byte >= 0x7F {
                out.append(contentsOf: [UInt8(ascii: "%"), hexDigit(byte >> 4), hexDigit(byte & 0xF)])
            } else {
                out.append(byte)
            }
            index += 1
        }
        return out
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }
}

/// Pattern matching of RFC 9309: a pattern matches a prefix of the path; `*`
/// stands for any run of octets and a final `$` for the path's end.
enum RobotsMatch {
    /// Greedy with one backtracking point (the last `*`): O(pattern x path)
    /// at worst, with no recursion.
    static func matches(_ pattern: [UInt8], _ path: [UInt8]) -> Bool {
        var end = pattern.count
        let anchored = end > 0 && pattern[end - 1] == UInt8(ascii: "$")
        if anchored { end -= 1 }
        let star = UInt8(ascii: "*")
        var p = 0, s = 0
        var starAt = -1, resumeAt = 0
        while true {
            if p == end {
                // Unanchored: the pattern matched a prefix. Anchored: only at the end,
                // else a star may take more.
                if !anchored || s == path.count { return true }
            } else if pattern[p] == star {
                starAt = p
                resumeAt = s
                p += 1
                continue
            } else if s < path.count, pattern[p] == path[s] {
                p += 1
                s += 1
                continue
            }
            guard starAt >= 0, resumeAt < path.count else { return false }
            resumeAt += 1
            s = resumeAt
            p = starAt + 1
        }
    }
}
