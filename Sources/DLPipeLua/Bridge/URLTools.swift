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

    /// `ref` resolved against `base`; nil when either does not parse.
    static func resolve(base: String, reference: String) -> String? {
        guard let baseURL = URL(string: base),
            let resolved = URL(string: reference.trimmingCharacters(in: .whitespaces), relativeTo: baseURL)
        else { return nil }
        return resolved.absoluteURL.absoluteString
    }

    /// The URL's parts (percent-decoded where Foundation decodes them), or nil when it does not parse.
    static func parts(of text: String) -> Parts? {
        guard let parts = URLComponents(string: text) else { return nil }
        return Parts(scheme: parts.scheme, host: parts.host, port: parts.port, path: parts.path,
                     query: parts.query, fragment: parts.fragment, user: parts.user)
    }
}
