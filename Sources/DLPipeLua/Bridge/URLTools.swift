import Foundation

/// `dl.url.resolve` and `dl.url.parse` (RFC 3986).
enum URLTools {
    /// `ref` resolved against `base`; nil when either does not parse.
    static func resolve(base: String, reference: String) -> String? {
        guard let baseURL = URL(string: base),
            let resolved = URL(string: reference.trimmingCharacters(in: .whitespaces), relativeTo: baseURL)
        else { return nil }
        return resolved.absoluteURL.absoluteString
    }

    /// A table of the URL's parts (scheme, host, port, path, query, fragment, user);
    /// nil when it does not parse. The password is never exposed.
    static func parse(_ text: String) -> LuaValue {
        guard let parts = URLComponents(string: text) else { return .nil_ }
        var table: [LuaValue: LuaValue] = [:]
        func set(_ key: String, _ value: String?) {
            if let value { table[LuaValue(key)] = LuaValue(value) }
        }
        set("scheme", parts.scheme)
        set("host", parts.host)
        set("path", parts.path)
        set("query", parts.query)
        set("fragment", parts.fragment)
        set("user", parts.user)
        if let port = parts.port { table[LuaValue("port")] = .integer(Int64(port)) }
        return .table(table)
    }
}
