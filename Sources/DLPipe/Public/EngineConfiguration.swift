/// Settings of one engine. Every field has the default the command line
/// documents; set the ones you need, by name, in `init` or afterwards:
///
/// ```swift
/// let engine = try DownloadEngine(configuration: EngineConfiguration(directory: "downloads", concurrency: 4))
/// ```
public struct EngineConfiguration: Sendable {
    /// Where files go; created when missing. Default ".".
    public var directory: String
    /// Transfers running at once, all hosts together. Default 8. The
    /// effective number is the smallest of this, `perHost` times the number
    /// of hosts queued, and what the descriptor limit (`ulimit -n`) leaves room
    /// for: one host's downloads run `min(concurrency, perHost)` at once, 4 by
    /// default.
    public var concurrency: Int
    /// Transfers running at once against one host (name and port as written
    /// in the URL). Default 4. Under HTTP/2 these are streams of one
    /// connection.
    public var perHost: Int
    /// Retries after the first attempt for retryable failures
    /// (`DownloadError.isRetryable`). Default 3.
    public var retries: Int
    /// Seconds without a received byte (or a connection) before an attempt
    /// fails with kind `timeout`. Default 30.
    public var timeout: Double
    /// curl's `-m/--max-time`: the most seconds one attempt may take, redirect
    /// hops included, however steadily bytes arrive (a trickle that `timeout`
    /// never catches); past it the attempt fails with kind `timeout`. nil (the
    /// default) for no limit.
    public var maxTime: Double?
    /// curl's `-Y/--speed-limit`: an attempt slower than this many bytes per
    /// second over `speedTime` seconds fails with kind `timeout`. nil (the
    /// default) for no limit.
    public var speedLimit: Int?
    /// curl's `-y/--speed-time`: the seconds `speedLimit` is measured over.
    /// Default 30, as curl's.
    public var speedTime: Double = 30
    /// aria2's `--split`: the most connections one large file is fetched over,
    /// by byte ranges, when its server allows (docs/design/split.md); 1 (the
    /// default) for one connection. A request's own `split` wins.
    public var split = 1
    /// A cap on the bytes per second of all transfers together; nil (the
    /// default) for none.
    public var rateLimit: Int?
    /// The first backoff delay in seconds; it doubles per attempt, with
    /// jitter. Default 1.
    public var backoffBase: Double
    /// The longest backoff, and the longest `Retry-After` honoured, in
    /// seconds. Default 300.
    public var backoffCap: Double
    /// Redirect hops followed before failing with kind `http`. Default 10.
    public var maxRedirects: Int
    /// Compute the SHA-256 of every file while it streams (otherwise only
    /// when a request has `sha256`). Default off.
    public var alwaysHash: Bool
    /// `--compressed`: ask for a compressed transfer (gzip or deflate, which
    /// libcurl decodes, in reads small enough that no body, however far it
    /// decodes, overruns libcurl's buffers) and store the decoded bytes; a compressed resource (a `.gz`
    /// name, an archive's media type) is stored as the server's bytes, and a
    /// resume asks for `identity`. Default off.
    public var compressed: Bool
    /// Sets each new file's modification time from its `Last-Modified` (as
    /// wget does by default, curl with `-R`); off with `--no-mtime`. Default on.
    public var remoteTime: Bool
    /// The User-Agent header. Default `dlpipe/VERSION`.
    public var userAgent: String
    /// The SQLite state file (SPEC 4); nil (the default) runs without state.
    /// The command line uses `DIR/.dlpipe/state.db`.
    public var statePath: String?
    /// A PEM file of certificate authorities to trust for https instead of the
    /// system's (curl's `--cacert`): a private CA, or a test server's own.
    /// Default nil.
    public var caFile: String?
    /// Proxies, TLS checks, host mapping, credentials and redirect rules
    /// (curl's options of the same names). Default: curl's defaults.
    public var transport: TransportOptions
    /// What a re-run does with downloads the state knows as finished.
    /// Default `.conditional`.
    public var refresh: RefreshPolicy
    /// When the queue drains with only paused downloads left (and `drained`
    /// hooks have run), fail those with kind `cancelled` so the run can end (the
    /// command line's choice). Off (the default), paused downloads wait for
    /// `resume` for ever.
    public var endPausedWhenDrained: Bool
    /// Whether `outcome(of:)` still answers for a download that ended before it
    /// was asked. Default on. Off, an ended download's outcome reaches only the
    /// events (and waiters already there), and memory does not grow with every
    /// download of a long queue: the command line turns it off.
    public var keepsOutcomes: Bool
    /// The command line's rule for repeats: a request added again in the same
    /// run gets its first id back even after that download ended, so a list
    /// that repeats a URL fetches it once. Off (the library's rule), only open
    /// downloads are deduplicated and an ended request can be added again.
    package var deduplicatesWholeRun = false
    /// How size errors name the limit they met: `DownloadRequest.maxSize`
    /// in the library; the command line names the Lua field (`max_size`).
    package var sizeLimitName = "maxSize"
    /// `--record DIR`: every response received is also written there.
    /// Default nil.
    public var recorder: ResponseRecorder?
    /// `--replay DIR`: every request is answered by this recording's server
    /// instead of the network (see ReplayServer). Default nil.
    public var replay: ReplayServer?
    /// Seconds a hook call (`DownloadHooks`) may take to reply. Default 2
    /// (the Lua handlers' budget). Past it the engine answers in the hook's
    /// place: the download fails with kind `hook` (a `drained` call counts as
    /// replied with no exit code), and the late reply is ignored. Nil waits
    /// for ever: the command line's Lua hooks have their own time budget per
    /// handler instead.
    public var hookDeadline: Double?
    /// How often progress events are emitted per transfer, in seconds.
    /// Default 0.25.
    public var progressInterval: Double
    /// `--overwrite`: the body replaces a regular file under the name it
    /// takes (renamed over it: a reader sees the old file or the new one),
    /// instead of going beside it as `name.1.ext`; a file the state placed and
    /// the user changed since is fetched again and replaced. Names that
    /// handlers choose, and names other downloads of the run hold, are never
    /// replaced. Default off.
    public var overwrite = false
    /// `--verify`: before a file an earlier run kept is asked about again, its
    /// bytes are hashed and compared with the SHA-256 the request or the state
    /// knows; one that differs is fetched unconditionally and replaced (even
    /// when the user changed it: the mirror is asked to match). A file with
    /// no known digest gets one recorded. Every body is hashed as it streams.
    /// Under `refresh` "never" a file that does not differ is kept without a
    /// request. Default off.
    public var verify = false
    /// Whether small bodies may skip the part file (`HeldFile`); internal, so
    /// that tests reach every path on any file system.
    var heldBodies = HeldBodies.auto
    /// `-b/--cookie FILE`: a Netscape cookie file read at the start; with it
    /// or `cookieJar` the engine keeps cookies across its transfers (CookieJar).
    public var cookieFile: String?
    /// `-c/--cookie-jar FILE`: where the session's cookies are written at the end.
    public var cookieJar: String?
    /// `--host-delay S`: the fewest seconds between the starts of two requests
    /// to one host (redirect hops included); 0 for none.
    public var hostDelay: Double
    /// `--robots`: each host's robots.txt is fetched before its first request
    /// and obeyed (RFC 9309); a URL it disallows ends skipped with the reason
    /// `robots.txt`, and its Crawl-delay slows the host when longer than
    /// `hostDelay`. Default off.
    public var robots = false
    /// The worker of a shared queue this engine runs for (docs/scale-out.md):
    /// its adds go into the queue, its claims run here, its part files are
    /// the worker's and placed only while its lease holds. Nil for an engine
    /// on its own.
    package var queue: (any QueueParticipant)?

    /// A configuration with the given settings and the defaults for the rest
    /// (`userAgent` nil: `dlpipe/VERSION`).
    public init(
        directory: String = ".", concurrency: Int = 8, perHost: Int = 4, retries: Int = 3,
        timeout: Double = 30, rateLimit: Int? = nil, backoffBase: Double = 1, backoffCap: Double = 300,
        maxRedirects: Int = 10, alwaysHash: Bool = false, compressed: Bool = false, remoteTime: Bool = true,
        userAgent: String? = nil,
        statePath: String? = nil, caFile: String? = nil, transport: TransportOptions = TransportOptions(),
        refresh: RefreshPolicy = .conditional, endPausedWhenDrained: Bool = false, keepsOutcomes: Bool = true,
        recorder: ResponseRecorder? = nil, replay: ReplayServer? = nil, hookDeadline: Double? = 2,
        progressInterval: Double = 0.25, cookieFile: String? = nil, cookieJar: String? = nil, hostDelay: Double = 0
    ) {
        self.directory = directory
        self.concurrency = concurrency
        self.perHost = perHost
        self.retries = retries
        self.timeout = timeout
        self.rateLimit = rateLimit
        self.backoffBase = backoffBase
        self.backoffCap = backoffCap
        self.maxRedirects = maxRedirects
        self.alwaysHash = alwaysHash
        self.compressed = compressed
        self.remoteTime = remoteTime
        self.userAgent = userAgent ?? "dlpipe/\(DLPipeVersion.string)"
        self.statePath = statePath
        self.caFile = caFile
        self.transport = transport
        self.refresh = refresh
        self.endPausedWhenDrained = endPausedWhenDrained
        self.keepsOutcomes = keepsOutcomes
        self.recorder = recorder
        self.replay = replay
        self.hookDeadline = hookDeadline
        self.progressInterval = progressInterval
        self.cookieFile = cookieFile
        self.cookieJar = cookieJar
        self.hostDelay = hostDelay
    }
}

/// Re-runs (SPEC 3): ask with validators (`conditional`), keep finished files
/// without asking (`never`), or fetch everything again (`always`).
public enum RefreshPolicy: String, Sendable, CaseIterable {
    /// Ask the server with the state's validators; a 304 keeps the file.
    case conditional
    /// Keep a finished file without a request.
    case never
    /// Fetch again, unconditionally.
    case always
}
