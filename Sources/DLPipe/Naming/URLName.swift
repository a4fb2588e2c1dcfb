/// Derives a candidate file name from a URL with a small hand-written parser.
///
/// Foundation's URL rejects or rewrites many odd inputs differently across platforms, so we
/// parse `scheme://authority/path?query#fragment` by hand on Unicode scalars. The result is
/// raw and untrusted (it may contain `/` from `%2F`); `SafeName.sanitize` must run on it.
enum URLName {
    /// The percent-decoded last path segment, or nil if the path is empty or ends with a separator.
    static func lastSegment(of url: String) -> String? {
        let path = rawPath(of: url)
        guard let last = path.last, !isSeparator(last) else { return nil }
        let start = path.lastIndex(where: isSeparator).map { $0 + 1 } ?? 0
        let decoded = percentDecoded(Array(path[start...]))
        return decoded.isEmpty ? nil : decoded
    }

    /// True when the URL's path is empty or ends with `/` (or `\`, which browsers treat alike).
    static func pathIsDirectory(_ url: String) -> Bool {
        let path = rawPath(of: url)
        return path.last.map(isSeparator) ?? true
    }

    /// The still-encoded path of `scheme://authority/path`, without query and fragment.
    ///
    /// Any syntactically valid scheme is accepted (not just http/https); input without
    /// `scheme://` is not treated as a URL and has an empty path.
    static func rawPath(of url: String) -> [Unicode.Scalar] {
        var s = Array(url.unicodeScalars)
        if let hash = s.firstIndex(of: "#") { s = Array(s[..<hash]) }
        if let question = s.firstIndex(of: "?") { s = Array(s[..<question]) }
        guard let colon = s.firstIndex(of: ":"), isScheme(s[..<colon]),
              colon + 2 < s.count, isSeparator(s[colon + 1]), isSeparator(s[colon + 2]) else { return [] }
        let afterSlashes = colon + 3
        // The authority ends at the first separator; everything from there on is the path.
        guard let pathStart = s[afterSlashes...].firstIndex(where: isSeparator) else { return [] }
        return Array(s[pathStart...])
    }

    /// `/`, or `\` which WHATWG URL parsing treats as `/` in http(s) URLs.
    private static func isSeparator(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "/" || scalar == "\\"
    }

    /// RFC 3986 scheme: a letter followed by letters, digits, `+`, `-` or `.`.
    private static func isScheme(_ scalars: ArraySlice<Unicode.Scalar>) -> Bool {
        func isLetter(_ c: Unicode.Scalar) -> Bool { ("a"..."z").contains(c) || ("A"..."Z").contains(c) }
        guard let first = scalars.first, isLetter(first) else { return false }
        return scalars.allSatisfy { isLetter($0) || ("0"..."9").contains($0) || $0 == "+" || $0 == "-" || $0 == "." }
    }

    /// Decodes `%XX` leniently (malformed escapes stay literal, as in browsers); bytes that are
    /// not valid UTF-8 are read as ISO-8859-1 so that no input is rejected.
    private static func percentDecoded(_ scalars: [Unicode.Scalar]) -> String {
        var bytes: [UInt8] = []
        var i = 0
        while i < scalars.count {
            if scalars[i] == "%", i + 2 < scalars.count,
               let hi = ContentDisposition.hexValue(scalars[i + 1]),
               let lo = ContentDisposition.hexValue(scalars[i + 2]) {
                bytes.append(hi << 4 | lo)
                i += 3
            } else {
                UTF8.encode(scalars[i]) { bytes.append($0) }  // no String per character
                i += 1
            }
        }
        return ContentDisposition.decodeUTF8OrLatin1(bytes)
    }
}
