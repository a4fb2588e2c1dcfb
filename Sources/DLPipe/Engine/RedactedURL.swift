/// URLs as they may be printed: a `user:password@` part is replaced by `***@`,
/// so credentials never reach logs, events or error messages.
package enum RedactedURL {
    public static func text(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let rest = url[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return url }
        return String(url[..<schemeEnd.upperBound]) + "***" + String(rest[at...])
    }
}
