/// `dl.url.parse`'s Lua face: `URLTools.Parts` as a table.
extension URLTools {
    /// A table of the URL's parts (scheme, host, port, path, query, fragment, user);
    /// nil when it does not parse. The password is never exposed.
    static func parse(_ text: String) -> LuaValue {
        guard let parts = parts(of: text) else { return .nil_ }
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
