import Foundation

/// The URL logic behind `dl.url.resolve` and `dl.url.parse` (RFC 3986).
///
/// Plain Swift values only, no Lua types: the fuzz target (Fuzz/URLResolveFuzz.swift) compiles
/// this file on its own. `URLTools+Lua.swift` turns `Parts` into the Lua table.
enum URLTools {
    /// The parts of a URL that scripts see; the password is left out on purpose.
    struct Parts: Equatable {
        var scheme: String?
        var host: String?
        var port: Int?
        var path: String
        var query: String?
        var fragment: String?
        var user: String?
    }

    /// `ref` resolved against `base`: an absolute URL, or nil when either does not parse or
    /// `base` is not absolute.
    static func resolve(base: String, reference: String) -> String? {
        // RFC 3986 §5.1 needs an absolute base. Foundation also accepts a relative one and then
        // gives relative or even empty results ("+" and "." resolved to ""), which no caller
        // can fetch or parse again.
        guard let baseURL = URL(string: base), hasScheme(baseURL) else { return nil }
        let reference = reference.trimmingCharacters(in: .whitespaces)
        // An empty reference is the base document itself (RFC 3986 §5.2.2, the
        // fragment dropped); Foundation makes no URL of "".
        if reference.isEmpty {
            guard let hash = base.firstIndex(of: "#") else { return base }
            return String(base[..<hash])
        }
        guard let resolved = URL(string: reference, relativeTo: baseURL),
            // Foundation reads ":x" as an absolute URL with an empty scheme and returns it as it
            // is; RFC 3986 allows neither an empty scheme nor a ':' in a relative reference's
            // first segment, so such a reference does not parse.
            hasScheme(resolved)
        else { return nil }
        let text = resolved.absoluteURL.absoluteString
        // A base without an authority ("s:") and a reference whose dots fold to a
        // path of "//..." give "s://...": read again, that path is an authority
        // (RFC 3986 §3.3 forbids such a path without one), and may not parse at
        // all (found by fuzzing). A result must parse again as what it is.
        guard let again = URLComponents(string: text), (again.host == nil) == (resolved.host == nil) else {
            return nil
        }
        return text
    }

    /// True when the URL has a non-empty scheme (Foundation reports "" for ":x").
    private static func hasScheme(_ url: URL) -> Bool {
        !(url.scheme ?? "").isEmpty
    }

    /// The URL's parts (percent-decoded where Foundation decodes them), or nil when it does not parse.
    static func parts(of text: String) -> Parts? {
        guard let parts = URLComponents(string: text) else { return nil }
        // Scheme and host are case-insensitive (RFC 3986 §6.2.2.1): scripts compare them lower-cased.
        return Parts(scheme: parts.scheme?.lowercased(), host: parts.host?.lowercased(), port: parts.port, path: parts.path,
                     query: parts.query, fragment: parts.fragment, user: parts.user)
    }
}
