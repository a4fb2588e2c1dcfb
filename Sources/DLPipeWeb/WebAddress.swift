import Foundation

/// Where `--web` listens: `ADDR:PORT`, `[IPv6]:PORT`, `localhost:PORT`, or a
/// bare `PORT` (on 127.0.0.1). Port 0 lets the kernel pick a free one.
public struct WebAddress: Sendable, Hashable {
    /// The host as given (an IPv6 address without its brackets).
    public let host: String
    public let port: UInt16
    /// The numeric address to bind (a name is resolved once, here).
    let numeric: String
    let ipv6: Bool

    /// Parses `text`; the error says what is wrong, for a usage message.
    public init(parsing text: String) throws(WebAddressError) {
        var host = "127.0.0.1"
        var portText = text
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw WebAddressError("wants [IPv6]:PORT, not \(text.debugDescription)")
            }
            host = String(text[text.index(after: text.startIndex)..<close])
            portText = String(text[text.index(close, offsetBy: 2)...])
        } else if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = String(text[text.index(after: colon)...])
            guard !host.isEmpty, !host.contains(":") else {
                throw WebAddressError("wants ADDR:PORT (an IPv6 address in brackets), not \(text.debugDescription)")
            }
        }
        guard let port = UInt16(portText) else {
            throw WebAddressError("wants a port from 0 to 65535, not \(portText.debugDescription)")
        }
        self.host = host
        self.port = port
        guard let (numeric, ipv6) = Self.resolve(host) else {
            throw WebAddressError("cannot resolve \(host.debugDescription) to an address to listen on")
        }
        self.numeric = numeric
        self.ipv6 = ipv6
    }

    /// Whether only this machine can reach it: 127.0.0.0/8, ::1, or a name
    /// that resolves there (`localhost`).
    public var isLoopback: Bool {
        ipv6 ? numeric == "::1" : numeric.hasPrefix("127.")
    }

    /// Whether it is every address of the machine (`0.0.0.0`, or `::`,
    /// which takes IPv4 clients too): no browser opens such a URL.
    public var isWildcard: Bool { numeric == "0.0.0.0" || numeric == "::" }

    /// The page's URL with the port actually bound. For every address, the
    /// machine's host name (what another machine types), else the address as given.
    public func url(port bound: UInt16) -> String {
        if isWildcard, let name = Self.hostName() { return "http://\(name):\(bound)/" }
        return Self.url(host, port: bound)
    }

    /// The URL a browser on this machine opens: the loopback address for
    /// every address, else `url(port:)`.
    public func localURL(port bound: UInt16) -> String {
        isWildcard ? Self.url("127.0.0.1", port: bound) : url(port: bound)
    }

    /// Where it listens, as `ADDR:PORT` with the port bound.
    public func listening(port bound: UInt16) -> String {
        (host.contains(":") ? "[\(host)]" : host) + ":\(bound)"
    }

    private static func url(_ host: String, port: UInt16) -> String {
        "http://\(host.contains(":") ? "[\(host)]" : host):\(port)/"
    }

    /// This machine's name as `gethostname` has it; nil when it has none
    /// (or only `localhost`, which says nothing to another machine).
    static func hostName() -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
        let name = text(buffer)
        return name.isEmpty || name == "localhost" || name.hasPrefix("localhost.") ? nil : name
    }

    /// The numeric address of `host`, and whether it is IPv6. A name is
    /// looked up once (its first address); `localhost` is 127.0.0.1 without a lookup.
    private static func resolve(_ host: String) -> (String, Bool)? {
        if host == "localhost" { return ("127.0.0.1", false) }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return (host, false) }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return (canonical6(v6), true) }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return nil }
        defer { freeaddrinfo(list) }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        if first.pointee.ai_family == AF_INET6 {
            let address = first.pointee.ai_addr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            return (canonical6(address), true)
        }
        var address = first.pointee.ai_addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
        guard inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        return (text(buffer), false)
    }

    private static func canonical6(_ address: in6_addr) -> String {
        var address = address
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count))
        return text(buffer)
    }

    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Calls `body` with the socket address to bind.
    func withSocketAddress<T>(port: UInt16, _ body: (UnsafePointer<sockaddr>) -> T) -> T {
        if ipv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            inet_pton(AF_INET6, numeric, &address.sin6_addr)
            return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, numeric, &address.sin_addr)
        return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
    }
}

/// Why an address for `--web` does not do.
public struct WebAddressError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
