/// Settings of one engine; every field has the default the command line documents.
public struct EngineConfiguration: Sendable {
    /// Where files go; created when missing.
    public var directory: String = "."
    /// Transfers running at once, all hosts together.
    public var concurrency: Int = 8
    /// Transfers running at once against one host.
    public var perHost: Int = 4
    /// Retries after the first attempt for retryable failures.
    public var retries: Int = 3
    /// Seconds without a received byte (or a connection) before an attempt fails.
    public var timeout: Double = 30
    /// A cap on the bytes per second of all transfers together; nil for none.
    public var rateLimit: Int? = nil
    /// The first backoff delay in seconds; it doubles per attempt, with jitter.
    public var backoffBase: Double = 1
    /// The longest backoff, and the longest `Retry-After` honoured, in seconds.
    public var backoffCap: Double = 300
    /// Redirect hops followed before failing.
    public var maxRedirects: Int = 10
    /// Compute the SHA-256 of every file while it streams (otherwise only when asked).
    public var alwaysHash: Bool = false
    /// The User-Agent header.
    public var userAgent: String = "dlpipe/\(DLPipeVersion.string)"
    /// The SQLite state file (SPEC 4); nil runs without state. The command line
    /// uses `DIR/.dlpipe/state.db`.
    public var statePath: String? = nil
    /// A PEM file of certificate authorities to trust for https instead of the
    /// system's (curl's `--cacert`): a private CA, or a test server's own.
    public var caFile: String? = nil
    /// Proxies, TLS checks, host mapping, credentials and redirect rules
    /// (curl's options of the same names).
    public var transport = TransportOptions()
    /// What a re-run does with downloads the state knows as finished.
    public var refresh: RefreshPolicy = .conditional
    /// When the queue drains with only paused downloads left (and `drained`
    /// hooks have run), fail those with kind `cancelled` so the run can end (the
    /// command line's choice). Off, paused downloads wait for `resume` forever.
    public var endPausedWhenDrained = false
    /// Whether `outcome(of:)` still answers for a download that ended before it
    /// was asked. Off, an ended download's outcome reaches only the events (and
    /// waiters already there), and memory does not grow with every download of
    /// a long queue: the command line turns it off.
    public var keepsOutcomes = true
    /// The command line's rule for repeats: a request added again in the same
    /// run gets its first id back even after that download ended, so a list
    /// that repeats a URL fetches it once. Off (the library's rule), only open
    /// downloads are deduplicated and an ended request can be added again.
    package var deduplicatesWholeRun = false
    /// `--record DIR`: every response received is also written there.
    public var recorder: ResponseRecorder? = nil
    /// `--replay DIR`: every request is answered by this recording's server
    /// instead of the network (see ReplayServer).
    public var replay: ReplayServer? = nil
    /// How often progress events are emitted per transfer, in seconds.
    public var progressInterval: Double = 0.25
    /// Whether small bodies may skip the part file (`HeldFile`); internal, so
    /// that tests reach every path on any file system.
    var heldBodies = HeldBodies.auto
    /// `-b/--cookie FILE`: a Netscape cookie file read at the start; with it
    /// or `cookieJar` the engine keeps cookies across its transfers (CookieJar).
    public var cookieFile: String? = nil
    /// `-c/--cookie-jar FILE`: where the session's cookies are written at the end.
    public var cookieJar: String? = nil
    /// `--host-delay S`: the fewest seconds between the starts of two requests
    /// to one host (redirect hops included); 0 for none.
    public var hostDelay: Double = 0

    /// The defaults.
    public init() {}
}

/// Re-runs (SPEC 3): ask with validators (`conditional`), keep finished files
/// without asking (`never`), or fetch everything again (`always`).
public enum RefreshPolicy: String, Sendable, CaseIterable {
    case conditional, never, always
}
