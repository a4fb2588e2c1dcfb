/// Why an attempt or a download failed. `kind` is what scripts and exit codes see.
public struct DownloadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The failure classes of the product contract (SPEC 1.2, `e.kind`).
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case http, network, timeout, checksum, io, hook, cancelled
        /// TLS failed: an untrusted or wrong certificate, a failed handshake.
        case tls
        /// The proxy failed: unreachable, refused the tunnel, wants credentials (407).
        case proxy
        /// The body is larger than the download's `maxSize` (its Content-Length
        /// said so, or the bytes went past it).
        case size
    }

    /// The class of failure.
    public var kind: Kind
    /// A one-line explanation for people.
    public var message: String
    /// The HTTP status, when a response arrived.
    public var status: Int?
    /// Seconds the server asked us to wait (Retry-After), already capped.
    public var retryAfter: Double?

    /// Builds an error.
    public init(_ kind: Kind, _ message: String, status: Int? = nil, retryAfter: Double? = nil) {
        self.kind = kind
        self.message = message
        self.status = status
        self.retryAfter = retryAfter
    }

    /// Whether the engine retries this failure on its own (SPEC 3: network errors,
    /// timeouts, 408, 429 and 5xx). Decided here and nowhere else.
    /// Never what cannot succeed on retry: TLS failures (the certificate will
    /// not change in seconds), a proxy that cannot be reached, refuses the
    /// tunnel or wants credentials; a proxy's 408, 429 and 5xx are retried.
    public var isRetryable: Bool {
        switch kind {
        case .network, .timeout: return true
        case .http, .proxy:
            guard let status else { return false }
            return status == 408 || status == 429 || (500...599).contains(status)
        case .checksum, .io, .hook, .cancelled, .tls, .size: return false
        }
    }

    public var description: String { "\(kind.rawValue): \(message)" }
}
