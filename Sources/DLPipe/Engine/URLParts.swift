/// The few URL facts the engine needs, read without Foundation's strict parser
/// (which rejects some URLs curl accepts).
struct URLParts: Equatable {
    var scheme: String
    /// Host and port as written, lower-cased (the "authority" minus userinfo).
    var hostPort: String

    init?(_ url: String) {
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

/// URLs as they may be printed: a `user:password@` part is replaced by `***@`,
/// so credentials never reach logs, events or error messages.
public enum RedactedURL {
    /// `url` with its `user:password@` part, if any, replaced by `***@`.
    public static func text(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let rest = url[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return url }
        return String(url[..<schemeEnd.upperBound]) + "***" + String(rest[at...])
    }
}
