/// Which redirects the engine follows, decided here for every hop (SPEC 3:
/// http and https only).
enum RedirectRule {
    /// Why the hop from `from` to `to` is refused, or nil when it may be followed.
    /// `allowInsecure` (`--allow-insecure-redirects`) lets https go on to http.
    static func refusal(from: String, to: String, allowInsecure: Bool = false) -> String? {
        guard let next = URLParts(to), next.isHTTP else {
            return "refused a redirect to \(quoted(RedactedURL.text(to))): only http and https are followed"
        }
        // An https download that a server sends on to http would travel the rest
        // of the way in clear text, where anyone on the path can read or change
        // the bytes (and nothing tells the user). Browsers warn; a batch tool has
        // nobody to warn, so it refuses. Asking for the http URL directly still works.
        if !allowInsecure && URLParts(from)?.scheme == "https" && next.scheme == "http" {
            return "refused a redirect from https to http (\(RedactedURL.text(to))): it would drop TLS (--allow-insecure-redirects follows it)"
        }
        return nil
    }
}
