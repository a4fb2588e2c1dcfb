/// The longest URL dlpipe takes: 64 KiB, in its text as given and in its
/// normal form (`URLNormalization`, where a non-ASCII byte becomes three).
///
/// Far above what servers accept (nginx answers 414 past 8 KiB by default)
/// and what docs/reliability.md promises to fetch (10,000 characters), and
/// low enough that everything done per URL (normalising, keys, naming, the
/// lines printed) stays small: a 3 MB link of `a` + U+0301 pairs once held
/// the engine for 37 s. A longer URL is refused the way other bad URLs are:
/// `dl.add` returns nil with a warning, the download fails with kind `url`.
public enum URLLimit {
    public static let maxBytes = 65_536

    /// Why `url` is refused, or nil when it is short enough. Constant time:
    /// a native string knows its UTF-8 length.
    public static func problem(_ url: String) -> String? {
        let count = url.utf8.count
        guard count > maxBytes else { return nil }
        return "URL too long: \(count) bytes, more than the \(maxBytes) dlpipe takes (\(shown(url)))"
    }

    /// The first 100 bytes of a long URL (cut at a scalar boundary) and
    /// "...": what messages and events show of one that was refused.
    public static func shown(_ url: String) -> String {
        var view = String.UnicodeScalarView()
        var used = 0
        for scalar in url.unicodeScalars {
            used += UTF8.width(scalar)
            if used > 100 { return String(view) + "..." }
            view.append(scalar)
        }
        return url
    }
}
