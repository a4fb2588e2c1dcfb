/// The one form of a URL that the engine queues, deduplicates and records:
/// one resource, one spelling, so that a link written two ways is fetched
/// once and a re-run finds what the last one recorded.
///
/// - What RFC 3986 does not allow is percent-encoded (as wget2 and browsers
///   send it): a raw space, a control byte, a non-ASCII character (as UTF-8
///   bytes) or any other character RFC 3986 has no place for (`"<>\^`{|}`) in
///   the userinfo, path or query becomes `%XX`; a `%` that does not start an
///   escape becomes `%25`.
/// - The equivalences of RFC 3986 section 6.2.2 are folded: the scheme and an
///   ASCII host in lower case; escapes in upper case (`%2f` is `%2F`), and an
///   escaped unreserved character (`%7E`, `%41`) as the character itself; dot
///   segments removed (`/a/../b` is `/b`); the default port dropped (`:80` for
///   http, `:443` for https); an empty path is `/`.
/// - The fragment is dropped: it never reaches the server (curl does not send
///   it), so `page#top` and `page#end` are one download of `page`.
/// - An IDN host takes its ASCII form (`IDNHost`, libidn2, under any locale):
///   `http://bücher.example/` is `http://xn--bcher-kva.example/`.
/// - Spaces and control bytes around the URL are dropped.
///
/// Normalising twice changes nothing (the shared queue keys on the result).
/// Text without `scheme://` is left as it is: the engine refuses it with its
/// own message. A state written before these folds keyed URLs as they were
/// written; `StateStore` re-keys such records when it opens (schema 6).
public enum URLNormalization {
    public static func normalize(_ url: String) -> String {
        // Past the limit a URL is refused, not fetched: left as it is, so the
        // work per URL stays bounded (`URLLimit`).
        if url.utf8.count > URLLimit.maxBytes { return url }
        // Most URLs are in their normal form already: one scan, no copies (a
        // job may add a million of them from its top level).
        return isNormal(url) ? url : normalizedByRules(url)
    }

    /// `normalize` without the fast path (the tests hold the two together).
    static func normalizedByRules(_ url: String) -> String {
        let bytes = trimmed(url)
        guard let authorityStart = authorityStart(of: bytes) else { return String(decoding: bytes, as: UTF8.self) }
        return normalize(bytes, authorityStart: authorityStart)
    }

    /// True when `normalize` would return `url` unchanged, for the common
    /// shape: `http` or `https`, a lower-case host with no userinfo and no
    /// default port, a path, and nothing to encode, fold or drop.
    static func isNormal(_ url: String) -> Bool {
        var utf8 = url.utf8.makeIterator()
        // The scheme: "http://" or "https://".
        for expected in [UInt8](arrayLiteral: 0x68, 0x74, 0x74, 0x70) where utf8.next() != expected { return false }
        var byte = utf8.next()
        let https = byte == 0x73
        if https { byte = utf8.next() }
        guard byte == 0x3A, utf8.next() == 0x2F, utf8.next() == 0x2F else { return false }
        // The host and port, up to the path.
        var port: [UInt8] = []
        var inPort = false
        var hostLength = 0
        while true {
            guard let next = utf8.next() else { return false }  // no path: "/" is added
            if next == 0x2F { break }
            if next == 0x3A { if inPort { return false }; inPort = true; continue }
            if inPort {
                guard isDigit(next), port.count < 5 else { return false }
                port.append(next)
            } else {
                // Letters in lower case, digits, '-' and '.': nothing else (no
                // userinfo, IPv6 literal or IDN) takes the fast path.
                guard (0x61...0x7A).contains(next) || isDigit(next) || next == 0x2D || next == 0x2E else { return false }
                hostLength += 1
            }
        }
        if hostLength == 0 || (inPort && (port.isEmpty || port.first == 0x30)) { return false }
        if port == (https ? [0x34, 0x34, 0x33] : [0x38, 0x30]) { return false }
        // Path and query: no escapes, fragments or bytes to encode; no dot
        // segments in the path. `dots` counts the bytes of the current path
        // segment while they are all dots (-1 once it has another byte).
        var inQuery = false
        var dots = 0
        while let next = utf8.next() {
            if next == 0x25 || next == 0x23 || mustEncode(next) { return false }
            if inQuery { continue }
            if next == 0x2F || next == 0x3F {
                if dots == 1 || dots == 2 { return false }
                dots = 0
                inQuery = next == 0x3F
            } else if next == 0x2E {
                if dots >= 0 { dots += 1 }
            } else {
                dots = -1
            }
        }
        return inQuery || !(dots == 1 || dots == 2)
    }

    /// A reference to resolve against a base (`dl.url.resolve`): an absolute
    /// URL as `normalize`, `//host/...` likewise, anything else encoded as a
    /// path, query and fragment.
    public static func normalizeReference(_ reference: String) -> String {
        let bytes = trimmed(reference)
        if let authorityStart = authorityStart(of: bytes) { return normalize(bytes, authorityStart: authorityStart) }
        if bytes.starts(with: [0x2F, 0x2F]) { return normalize(bytes, authorityStart: 2) }
        if let colon = bytes.firstIndex(of: 0x3A), bytes[..<colon].allSatisfy({ $0 != 0x2F && $0 != 0x3F && $0 != 0x23 }) {
            return String(decoding: bytes, as: UTF8.self)  // "mailto:x": a scheme of its own
        }
        var out: [UInt8] = []
        encodeRest(bytes, from: 0, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static func trimmed(_ text: String) -> [UInt8] {
        var bytes = Array(text.utf8)
        while let last = bytes.last, last <= 0x20 { bytes.removeLast() }
        let start = bytes.firstIndex { $0 > 0x20 } ?? bytes.endIndex
        if start > 0 { bytes.removeFirst(start) }
        return bytes
    }

    private static func normalize(_ bytes: [UInt8], authorityStart: Int) -> String {
        let authorityEnd = bytes[authorityStart...].firstIndex { $0 == 0x2F || $0 == 0x3F || $0 == 0x23 } ?? bytes.endIndex
        // A reference "//host/..." has no scheme: nothing to lower, no default port.
        let scheme = authorityStart >= 3 ? bytes[..<(authorityStart - 3)].map(lowered) : []
        var out = scheme + bytes[(authorityStart - (authorityStart >= 3 ? 3 : 2))..<authorityStart]
        out.reserveCapacity(bytes.count + 8)
        var hostPort = bytes[authorityStart..<authorityEnd]
        if let at = hostPort.lastIndex(of: 0x40) {  // userinfo@host
            encode(hostPort[..<at], into: &out)
            out.append(0x40)
            hostPort = hostPort[(at + 1)...]
        }
        out.append(contentsOf: withoutDefaultPort(IDNHost.ascii(hostPort.map(lowered)), scheme: scheme))
        let hasAuthority = authorityEnd > authorityStart
        var rest: [UInt8] = []
        encodeRest(bytes, from: authorityEnd, into: &rest)
        let pathEnd = rest.firstIndex(of: 0x3F) ?? rest.endIndex
        var path = removingDotSegments(Array(rest[..<pathEnd]))
        if path.isEmpty && hasAuthority && isWebScheme(scheme) { path = [0x2F] }
        out.append(contentsOf: path)
        out.append(contentsOf: rest[pathEnd...])
        return String(decoding: out, as: UTF8.self)
    }

    /// Path and query from `start` on, encoded; the fragment is left out.
    private static func encodeRest(_ bytes: [UInt8], from start: Int, into out: inout [UInt8]) {
        let end = bytes[start...].firstIndex(of: 0x23) ?? bytes.endIndex
        encode(bytes[start..<end], into: &out)
    }

    private static func isWebScheme(_ scheme: [UInt8]) -> Bool {
        scheme == Array("http".utf8) || scheme == Array("https".utf8)
    }

    /// `host:80` for http and `host:443` for https as `host`; an empty port too.
    private static func withoutDefaultPort(_ hostPort: [UInt8], scheme: [UInt8]) -> [UInt8] {
        // The port follows the last colon that is not inside an IPv6 literal.
        guard let colon = hostPort.lastIndex(of: 0x3A), !hostPort[colon...].contains(0x5D) else { return hostPort }
        let port = hostPort[(colon + 1)...]
        let defaultPort = scheme == Array("http".utf8) ? Array("80".utf8) : scheme == Array("https".utf8) ? Array("443".utf8) : nil
        if port.isEmpty || (defaultPort != nil && Array(port.drop { $0 == 0x30 }) == defaultPort!) {
            return Array(hostPort[..<colon])
        }
        return hostPort
    }

    /// RFC 3986 section 5.2.4: `.` and `..` segments folded away.
    static func removingDotSegments(_ path: [UInt8]) -> [UInt8] {
        guard path.contains(0x2E) else { return path }
        var input = path[...]
        var output: [[UInt8]] = []  // segments, each with its leading "/" when it had one
        while !input.isEmpty {
            if input.starts(with: Array("../".utf8)) { input = input.dropFirst(3) }
            else if input.starts(with: Array("./".utf8)) { input = input.dropFirst(2) }
            else if input.starts(with: Array("/./".utf8)) { input = input.dropFirst(2) }
            else if input.elementsEqual(Array("/.".utf8)) { input = [0x2F] }
            else if input.starts(with: Array("/../".utf8)) { input = input.dropFirst(3); _ = output.popLast() }
            else if input.elementsEqual(Array("/..".utf8)) { input = [0x2F]; _ = output.popLast() }
            else if input.elementsEqual([0x2E]) || input.elementsEqual([0x2E, 0x2E]) { input = [] }
            else {
                let from = input.first == 0x2F ? input.index(after: input.startIndex) : input.startIndex
                let end = input[from...].firstIndex(of: 0x2F) ?? input.endIndex
                output.append(Array(input[..<end]))
                input = input[end...]
            }
        }
        return output.flatMap { $0 }
    }

    /// Where the authority begins: after `scheme://`; nil without one.
    private static func authorityStart(of bytes: [UInt8]) -> Int? {
        guard let colon = bytes.firstIndex(of: 0x3A), colon > 0, isLetter(bytes[0]) else { return nil }
        for byte in bytes[1..<colon] where !(isLetter(byte) || isDigit(byte) || byte == 0x2B || byte == 0x2D || byte == 0x2E) {
            return nil
        }
        guard colon + 2 < bytes.count, bytes[colon + 1] == 0x2F, bytes[colon + 2] == 0x2F else { return nil }
        return colon + 3
    }

    /// Userinfo, path or query: every byte in its one form.
    private static func encode(_ part: ArraySlice<UInt8>, into out: inout [UInt8]) {
        var index = part.startIndex
        while index < part.endIndex {
            let byte = part[index]
            if byte == 0x25 && isEscape(part, at: index) {
                // An unreserved character as itself, any other byte as `%` and
                // two upper-case digits.
                let decoded = hexValue(part[index + 1]) << 4 | hexValue(part[index + 2])
                if isUnreserved(decoded) { out.append(decoded) } else { appendEscape(decoded, to: &out) }
                index += 3
                continue
            }
            if byte == 0x25 || mustEncode(byte) { appendEscape(byte, to: &out) } else { out.append(byte) }
            index += 1
        }
    }

    /// A byte RFC 3986 allows nowhere outside an escape: controls, space, DEL,
    /// non-ASCII, `"<>\^`{|}`, and `#` (what is left of one after the fragment).
    private static func mustEncode(_ byte: UInt8) -> Bool {
        if byte <= 0x20 || byte >= 0x7F { return true }
        switch byte {
        case 0x22, 0x23, 0x3C, 0x3E, 0x5C, 0x5E, 0x60, 0x7B, 0x7C, 0x7D: return true
        default: return false
        }
    }

    private static func isUnreserved(_ b: UInt8) -> Bool {
        isLetter(b) || isDigit(b) || b == 0x2D || b == 0x2E || b == 0x5F || b == 0x7E
    }

    private static func hexValue(_ b: UInt8) -> UInt8 {
        isDigit(b) ? b - 0x30 : (b | 0x20) - 0x61 + 10
    }

    private static func lowered(_ b: UInt8) -> UInt8 { (0x41...0x5A).contains(b) ? b | 0x20 : b }

    private static func isEscape<C: Collection<UInt8>>(_ bytes: C, at index: C.Index) -> Bool {
        let first = bytes.index(after: index)
        guard first < bytes.endIndex else { return false }
        let second = bytes.index(after: first)
        return second < bytes.endIndex && isHex(bytes[first]) && isHex(bytes[second])
    }

    private static func appendEscape(_ byte: UInt8, to out: inout [UInt8]) {
        let digits = Array("0123456789ABCDEF".utf8)
        out.append(0x25)
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0xF)])
    }

    private static func isLetter(_ b: UInt8) -> Bool { (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) }
    private static func isDigit(_ b: UInt8) -> Bool { (0x30...0x39).contains(b) }
    private static func isHex(_ b: UInt8) -> Bool { isDigit(b) || (0x41...0x46).contains(b) || (0x61...0x66).contains(b) }
}
