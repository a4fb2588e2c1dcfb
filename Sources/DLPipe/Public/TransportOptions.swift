/// How transfers reach servers: proxies, TLS trust, host mapping, credentials
/// and redirects. Each field maps onto a libcurl option and carries curl's
/// name for it; the defaults are curl's, except where noted.
public struct TransportOptions: Sendable, Equatable {
    /// The proxy for every URL (curl's `-x`), e.g. `http://user:pass@proxy:3128`.
    /// nil: the environment's, as curl reads it (`http_proxy`, `https_proxy`,
    /// `ALL_PROXY`, `no_proxy`); "" uses none.
    public var proxy: String? = nil
    /// Hosts reached without the proxy (curl's `--noproxy`): a comma-separated
    /// list of names (a name covers its subdomains), addresses, or `*`. nil:
    /// the environment's `no_proxy`.
    public var noProxy: String? = nil
    /// Skips certificate and host name checks (curl's `-k`). Dangerous: anyone
    /// on the path can read and change the bytes.
    public var insecure = false
    /// A directory of certificate authorities (hashed names, curl's `--capath`).
    public var caPath: String? = nil
    /// `HOST:PORT:ADDR[,ADDR]` entries (curl's `--resolve`): the name stays
    /// the one the user gave (Host header, TLS name, per-host limits).
    public var resolve: [String] = []
    /// `HOST1:PORT1:HOST2:PORT2` entries (curl's `--connect-to`).
    public var connectTo: [String] = []
    /// Follows redirects from https to http (off: refused, they would drop TLS).
    public var allowInsecureRedirects = false
    /// `USER:PASSWORD` for the server (curl's `-u`); sent to the requested
    /// host and port only, never to another after a redirect.
    public var credentials: String? = nil
    /// Reads credentials from a netrc file (curl's `--netrc`, `--netrc-file`).
    public var netrc: Netrc = .ignored
    /// Which HTTP authentication schemes may be used with credentials.
    public var authentication: Authentication = .basic

    /// Where credentials may come from besides `credentials`.
    public enum Netrc: Sendable, Equatable {
        /// No netrc (the default, as curl's).
        case ignored
        /// `~/.netrc` (curl's `--netrc`); `-u` wins.
        case home
        /// This file (curl's `--netrc-file`); `-u` wins.
        case file(String)
    }

    /// Authentication schemes (curl's default Basic, `--digest`, `--anyauth`).
    public enum Authentication: String, Sendable, Equatable {
        /// Basic only, sent with the first request (curl's default).
        case basic
        /// Digest only (curl's `--digest`).
        case digest
        /// Whatever the server offers, the safest first (curl's `--anyauth`).
        case any
    }

    /// curl's defaults (and the environment's proxies).
    public init() {}
}
