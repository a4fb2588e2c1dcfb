/// Counts of a drained queue. `finished` counts files downloaded in this run;
/// files found current (304, or refresh "never") count as `unchanged` instead.
/// `failed` leaves out the failures a `failed` hook handled: they are `handled`.
/// `bytes` are the body bytes received in this run.
public struct RunSummary: Sendable, Hashable {
    /// Files downloaded (new or changed) since the engine started.
    public var finished = 0
    /// Downloads that ended `failed`.
    public var failed = 0
    /// Failures a `failed` hook dealt with (`FailureVerdict.handled`).
    public var handled = 0
    /// Downloads a hook skipped.
    public var skipped = 0
    /// Downloads cancelled by the caller or a hook.
    public var cancelled = 0
    /// Downloads whose file was found current (304, or refresh "never").
    public var unchanged = 0
    /// `verify`: kept files hashed again and compared with their known
    /// SHA-256 (a match, kept or fetched on, or a mismatch), counted as
    /// their downloads end.
    public var verified = 0
    /// `verify`: of `verified`, the files that no longer matched (or could
    /// not be read) and were fetched again and replaced; each is also
    /// counted in `finished`.
    public var replaced = 0
    /// Body bytes received since the engine started, all attempts together.
    public var bytes: Int64 = 0
    /// Seconds from the engine's start to this summary.
    public var seconds: Double = 0
    /// Why records are missing from the state at the end of the run (a full
    /// disk, say), when they are: files written after their records failed
    /// were failed with the reason, but a record written after its file was
    /// in place may be missing, and a re-run then finds such a file as one it
    /// did not write. Nil when everything was recorded.
    public var stateError: String?
    /// Why the cookie jar (`EngineConfiguration.cookieJar`) could not be
    /// written at the last drain; nil when it was, or when there is none.
    public var cookieJarError: String?
    /// What the run wants its user to know once, whatever the output (a
    /// host whose robots.txt could not be read, so that its downloads were
    /// all skipped), in the order met. The command line prints them even
    /// with `-q`.
    public var warnings: [String] = []
    /// All counts at zero.
    public init() {}
}
