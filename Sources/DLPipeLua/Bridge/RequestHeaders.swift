import DLPipe

/// `q.headers` as a `request` handler left it, read back into Swift. Names and
/// values are strings (a number is taken as its text); anything else, or a
/// `q.headers` that is no longer a table, fails the download with kind `hook`
/// and says which header. The engine then checks names and values
/// (HeaderField): no CR, LF or other control characters.
enum RequestHeaders {
    struct Problem: Error { let message: String }

    static func read(_ value: LuaValue?) -> Result<[String: String], Problem> {
        guard let value, value != .nil_ else { return .success([:]) }
        guard case .table(let table) = value else {
            return .failure(Problem(message: "request handler: q.headers must stay a table of strings, not \(describe(value))"))
        }
        var headers: [String: String] = [:]
        for (key, item) in table {
            guard let name = key.text else {
                return .failure(Problem(message: "request handler: q.headers has a key that is \(describe(key)), not a header name"))
            }
            switch item {
            case .string: headers[name] = item.text
            case .integer(let i): headers[name] = String(i)
            case .number(let d): headers[name] = String(d)
            default:
                return .failure(Problem(message: "request handler: q.headers[\(name.debugDescription)] is \(describe(item)); a header value is a string (nil removes it)"))
            }
        }
        return .success(headers)
    }

    private static func describe(_ value: LuaValue) -> String {
        switch value {
        case .nil_: "nil"
        case .boolean: "a boolean"
        case .integer, .number: "a number"
        case .string: "a string"
        case .table: "a table"
        case .function: "a function"
        case .opaque(let type): "a \(type)"
        }
    }
}
