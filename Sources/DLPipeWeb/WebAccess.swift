/// Who may read the web view: with a token, only requests that carry it
/// (`Authorization: Bearer TOKEN`, the cookie the page's `?token=` sets);
/// without one (a loopback address), anyone on this machine, but only under
/// a loopback Host name, so that a web page elsewhere cannot rename itself
/// to 127.0.0.1 through its DNS and read the run from a browser here.
public struct WebAccess: Sendable {
    public let token: String?

    /// The cookie the page's `?token=` sets.
    static let cookieName = "dlpipe_token"

    public init(token: String?) {
        self.token = token
    }

    /// Why a token cannot be used as given; nil when it can. The characters
    /// are those a URL and a cookie carry as they are (hex and base64url do).
    public static func problem(token: String) -> String? {
        if token.isEmpty { return "the token is empty" }
        let allowed = token.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "~")
        }
        return allowed ? nil : "the token may hold only letters, digits and - _ . ~ (hex or base64url)"
    }

    /// What a request gets.
    enum Verdict: Equatable {
        case allowed
        /// The token came in the query: set the cookie and send the browser
        /// to the same path without it (so that it stays out of the address bar).
        case setCookie
        case unauthorized
        case badHost
    }

    /// The verdict for a request's Authorization header, token cookie,
    /// `?token=` argument and Host header.
    func verdict(authorization: String?, cookie: String?, query: String?, host: String?) -> Verdict {
        guard let token else {
            return host.map(Self.isLoopbackHost) ?? true ? .allowed : .badHost
        }
        if let authorization, authorization.count > 7, authorization.prefix(7).lowercased() == "bearer ",
            Self.same(String(authorization.dropFirst(7)).trimmingCharacters(in: " "), token)
        {
            return .allowed
        }
        if let cookie, Self.same(cookie, token) { return .allowed }
        if let query, Self.same(query, token) { return .setCookie }
        return .unauthorized
    }

    /// The Set-Cookie header's value for the token.
    var cookie: String {
        "\(Self.cookieName)=\(token ?? ""); Path=/; HttpOnly; SameSite=Strict"
    }

    /// Compares in time that depends on the lengths only, never on where
    /// the first difference is.
    static func same(_ given: String, _ expected: String) -> Bool {
        let a = Array(given.utf8)
        let b = Array(expected.utf8)
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
        }
        return difference == 0
    }

    /// `localhost`, `127.x.y.z` or `[::1]`, with or without a port.
    static func isLoopbackHost(_ header: String) -> Bool {
        var name = Substring(header.lowercased())
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return false }
            return name[name.index(after: name.startIndex)..<close] == "::1"
        }
        if let colon = name.firstIndex(of: ":") { name = name[..<colon] }
        if name == "localhost" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        var text = Substring(self)
        while text.first == set { text = text.dropFirst() }
        while text.last == set { text = text.dropLast() }
        return String(text)
    }
}
