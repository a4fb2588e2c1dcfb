/// The one form of a URL that the engine queues, deduplicates and records:
/// what RFC 3986 does not allow is percent-encoded (as wget2 and browsers
/// send it), and nothing else changes.
///
/// - A raw space, a control byte, a non-ASCII character (as UTF-8 bytes) or
///   any other character RFC 3986 has no place for (`"<>\^`{|}`) in the
///   userinfo, path, query or fragment becomes `%XX`; a `%` that does not
///   start an escape becomes `%25`; a second `#` becomes `%23`.
/// - Valid escapes stay as they are (`%2f` is not made `%2F`), and case is
///   kept, so a URL that was valid is unchanged byte for byte, and so is every
///   record an earlier run keyed by it.
/// - The host is kept as written, an IDN host in Unicode too: libcurl turns it
///   into punycode on the wire (libidn2). `http://bücher.example/` and
///   `http://xn--bcher-kva.example/` are therefore two keys for one server.
/// - Spaces and control bytes around the URL are dropped.
///
/// Normalising twice changes nothing (the shared queue keys on the result).
/// Text without `scheme://` is left as it is: the engine refuses it with its
/// own message.
public enum URLNormalization {
    public static func normalize(_ url: String) -> String {
        let bytes = trimmed(url)
        guard let authorityStart = authorityStart(of: bytes) else { return String(decoding: bytes, as: UTF8.self) }
        return normalize(bytes, authorityStart: authorityStart)
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
        var out = Array(bytes[..<authorityStart])
        out.reserveCapacity(bytes.count + 8)
        let authority = bytes[authorityStart..<authorityEnd]
        if let at = authority.lastIndex(of: 0x40) {  // userinfo@host
            encode(authority[..<at], into: &out, inFragment: false)
            out.append(contentsOf: authority[at...])
        } else {
            out.append(contentsOf: authority)
        }
        encodeRest(bytes, from: authorityEnd, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Path, query and fragment, from `start` on.
    private static func encodeRest(_ bytes: [UInt8], from start: Int, into out: inout [UInt8]) {
        var inFragment = false
        var index = start
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == 0x23 && !inFragment {
                inFragment = true
                out.append(byte)
            } else if byte == 0x25 {
                out.append(contentsOf: isEscape(bytes, at: index) ? [0x25] : Array("%25".utf8))
            } else if mustEncode(byte, inFragment: inFragment) {
                appendEscape(byte, to: &out)
            } else {
                out.append(byte)
            }
            index += 1
        }
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

    private static func encode(_ part: ArraySlice<UInt8>, into out: inout [UInt8], inFragment: Bool) {
        for index in part.indices {
            let byte = part[index]
            if byte == 0x25 {
                out.append(contentsOf: isEscape(part, at: index) ? [0x25] : Array("%25".utf8))
            } else if mustEncode(byte, inFragment: inFragment) {
                appendEscape(byte, to: &out)
            } else {
                out.append(byte)
            }
        }
    }

    /// A byte RFC 3986 allows nowhere outside an escape: controls, space, DEL,
    /// non-ASCII, `"<>\^`{|}`, and a `#` inside the fragment.
    private static func mustEncode(_ byte: UInt8, inFragment: Bool) -> Bool {
        if byte <= 0x20 || byte >= 0x7F { return true }
        switch byte {
        case 0x22, 0x3C, 0x3E, 0x5C, 0x5E, 0x60, 0x7B, 0x7C, 0x7D: return true
        case 0x23: return inFragment
        default: return false
        }
    }

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
