import Foundation

/// Why an attempt or a download failed. `kind` is what scripts and exit codes see.
/// As a `LocalizedError`, its description is `message`, the text the command
/// line prints for a failure.
public struct DownloadError: LocalizedError, Sendable, Hashable, CustomStringConvertible {
    /// The failure classes of the product contract (SPEC 1.2, `e.kind`).
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The server answered with a status that is not a success (404,
        /// 500, ...: `status` has it), or broke HTTP's rules (a redirect loop,
        /// a redirect without a usable Location, headers past the limit).
        case http
        /// The connection failed or broke: refused, reset, a name that does
        /// not resolve, a body cut short.
        case network
        /// No byte (or no connection) within `EngineConfiguration.timeout`.
        case timeout
        /// The body's SHA-256 is not `DownloadRequest.sha256`.
        case checksum
        /// A local file operation failed: the part file, the output directory,
        /// the state, the descriptor limit.
        case io
        /// A hook failed, refused something (a rename out of the output
        /// directory, a header with CR LF), or did not reply within
        /// `EngineConfiguration.hookDeadline`.
        case hook
        /// Cancelled by the caller or a hook, or paused and never resumed
        /// when the command line's queue drained.
        case cancelled
        /// The URL cannot be fetched: malformed, no host, or a scheme other
        /// than http and https. Never retried.
        case url
        /// TLS failed: an untrusted or wrong certificate, a failed handshake.
        case tls
        /// The proxy failed: unreachable, refused the tunnel, wants credentials (407).
        case proxy
        /// The body is larger than the download's `maxSize` (its Content-Length
        /// said so, or the bytes went past it).
        case size
    }

    /// The class of failure (what scripts see as `e.kind`).
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
        case .checksum, .io, .hook, .cancelled, .tls, .url, .size: return false
        }
    }

    /// `kind: message`, as the state's last error records it.
    public var description: String { "\(kind.rawValue): \(message)" }

    /// `message`: what `localizedDescription` gives, as the command line prints it.
    public var errorDescription: String? { message }
}
