/// Which proxy a URL goes through. Decided here, by curl's rules, instead of
/// inside libcurl (which reads the same variables), because libcurl 7.88 cannot
/// say afterwards whether it used one: a failure must name the proxy when it is
/// the proxy's (a dead proxy is not the origin's "Couldn't connect").
/// The choice is then given to curl explicitly, so both always agree.
enum ProxyChoice {
    /// The proxy URL for `url`, or nil to connect directly.
    /// `environment` is the process's (curl's variables, see `TransportOptions.proxy`).
    static func proxy(for url: String, options: TransportOptions, environment: [String: String]) -> String? {
        guard let parts = URLParts(url) else { return nil }
        let configured = options.proxy ?? fromEnvironment(scheme: parts.scheme, environment)
        guard let configured, !configured.isEmpty else { return nil }
        let exceptions = options.noProxy ?? environment["no_proxy"] ?? environment["NO_PROXY"] ?? ""
        if bypasses(host: hostName(parts.hostPort), exceptions) { return nil }
        return configured
    }

    /// curl's order: `http_proxy` (lower case only, as curl: an upper-case
    /// HTTP_PROXY may come from a CGI request's `Proxy:` header),
    /// `https_proxy` or `HTTPS_PROXY`, then `all_proxy` or `ALL_PROXY`.
    private static func fromEnvironment(scheme: String, _ environment: [String: String]) -> String? {
        let own = environment[scheme + "_proxy"] ?? (scheme == "http" ? nil : environment[scheme.uppercased() + "_PROXY"])
        if let own, !own.isEmpty { return own }
        return environment["all_proxy"] ?? environment["ALL_PROXY"]
    }

    /// The host of a `host:port` or `[v6]:port` authority.
    static func hostName(_ hostPort: String) -> String {
        if hostPort.hasPrefix("["), let close = hostPort.firstIndex(of: "]") {
            return String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
        }
        if let colon = hostPort.lastIndex(of: ":") { return String(hostPort[..<colon]) }
        return hostPort
    }

    /// Whether `host` is in a no-proxy list (curl's rules): `*` alone covers
    /// every host; otherwise entries separated by commas or blanks, each a name
    /// that covers itself and its subdomains (a leading dot changes nothing),
    /// an address, or an IPv4 network as `ADDR/BITS`. Case does not matter.
    static func bypasses(host: String, _ list: String) -> Bool {
        let entries = list.split { $0 == "," || $0 == " " || $0 == "\t" }.map { $0.lowercased() }
        if entries.count == 1 && entries[0] == "*" { return true }
        let host = host.lowercased().hasSuffix(".") ? String(host.lowercased().dropLast()) : host.lowercased()
        for var entry in entries {
            if entry.hasPrefix("[") && entry.hasSuffix("]") { entry = String(entry.dropFirst().dropLast()) }
            if let slash = entry.firstIndex(of: "/"), let network = IPv4(entry[..<slash]),
                let bits = Int(entry[entry.index(after: slash)...]), (0...32).contains(bits), let address = IPv4(host[...])
            {
                let mask: UInt32 = bits == 0 ? 0 : ~UInt32(0) << (32 - bits)
                if address.value & mask == network.value & mask { return true }
                continue
            }
            if entry.hasPrefix(".") { entry.removeFirst() }
            if entry.hasSuffix(".") { entry.removeLast() }
            guard !entry.isEmpty else { continue }
            if host == entry || host.hasSuffix("." + entry) { return true }
        }
        return false
    }

    /// A dotted IPv4 address.
    private struct IPv4 {
        let value: UInt32
        init?(_ text: Substring) {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 4 else { return nil }
            var value: UInt32 = 0
            for part in parts {
                guard let byte = UInt8(part) else { return nil }
                value = value << 8 | UInt32(byte)
            }
            self.value = value
        }
    }
}
