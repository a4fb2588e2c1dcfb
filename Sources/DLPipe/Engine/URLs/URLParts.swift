/// The few URL facts the engine needs, read without Foundation's strict parser
/// (which rejects some URLs curl accepts).
package struct URLParts: Equatable {
    var scheme: String
    /// Host and port as written, lower-cased (the "authority" minus userinfo).
    package var hostPort: String

    package init?(_ url: String) {
        guard let colon = url.firstIndex(of: ":") else { return nil }
        scheme = url[..<colon].lowercased()
        let rest = url[url.index(after: colon)...]
        guard rest.hasPrefix("//") else {
            hostPort = ""
            return
        }
        let authority = rest.dropFirst(2).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostPart = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? ""
        hostPort = hostPart.lowercased()
    }

    /// Whether the engine may fetch this scheme.
    var isHTTP: Bool { scheme == "http" || scheme == "https" }
}
