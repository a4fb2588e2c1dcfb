/// One request about to be sent: an attempt's first hop or a redirect's next
/// one. What a `request` hook sees and changes.
public struct RequestInfo: Sendable, Hashable {
    /// The URL this hop asks (after the redirects so far).
    public var url: String
    /// The attempt, from 1.
    public var attempt: Int
    /// The headers the download would send on this hop: the caller's, without
    /// credentials once a redirect left the first host. The engine's own
    /// (Range, If-None-Match, ...) are added after the hook.
    public var headers: [String: String]

    public init(url: String, attempt: Int, headers: [String: String]) {
        self.url = url
        self.attempt = attempt
        self.headers = headers
    }
}

/// What a `request` hook decided.
public enum RequestVerdict: Sendable, Hashable {
    /// Send this hop with these headers (they replace `RequestInfo.headers`,
    /// for this hop only: the next hop asks again).
    case send(headers: [String: String])
    /// The hook failed: the attempt fails with kind `hook`, no retry.
    case fail(DownloadError)
}
