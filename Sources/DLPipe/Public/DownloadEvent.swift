/// A download as hooks and observers see it at one moment.
public struct DownloadInfo: Sendable, Hashable {
    public var id: DownloadID
    public var url: String
    /// The file name once known (after the response), else the requested one.
    public var name: String?
    /// The directory relative to the output directory ("" for the output directory).
    public var directory: String
    /// The final path once the name is known.
    public var path: String?
    public var parent: DownloadID?
    /// 1 for the first attempt.
    public var attempt: Int
    public var meta: [String: String]
}

/// The final response of an attempt, after redirects.
public struct ResponseInfo: Sendable, Hashable {
    public var status: Int
    /// Header names in lower case; repeated headers joined with ", ", but
    /// `set-cookie`, whose lines are joined with "\n" (see `setCookies`).
    public var headers: [String: String]
    /// Media type without parameters, lower case ("" when absent).
    public var type: String
    /// The body length of the whole resource when known.
    public var length: Int64?
    /// The server's suggested name, already sanitised.
    public var filename: String
    /// The URL after redirects.
    public var url: String

    /// Each `Set-Cookie` line of the response, in order (a comma cannot
    /// separate them: cookie dates hold commas).
    public var setCookies: [String] {
        headers["set-cookie"].map { $0.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) } ?? []
    }
}

/// A coalesced progress report.
public struct ProgressInfo: Sendable, Hashable {
    /// Bytes of the file so far, including bytes resumed from an earlier attempt.
    public var bytes: Int64
    public var total: Int64?
    /// Bytes per second over the recent past.
    public var rate: Double

    /// 0...1 when the total is known.
    public var fraction: Double? {
        guard let total, total > 0 else { return nil }
        return min(1, Double(bytes) / Double(total))
    }
    /// Seconds left at the current rate, when it can be estimated.
    public var eta: Double? {
        guard let total, rate > 0 else { return nil }
        return Double(max(0, total - bytes)) / rate
    }
}

/// What a finished download produced.
public struct FinishedInfo: Sendable, Hashable {
    public var path: String
    public var bytes: Int64
    /// Hex SHA-256 when it was computed while streaming (asked for, or verified).
    public var sha256: String?
    public var type: String
    public var seconds: Double
    /// True when the server said 304 and the existing file was kept.
    public var unchanged: Bool
}

/// Counts of a drained queue. `finished` counts files downloaded in this run;
/// files found current (304, or refresh "never") count as `unchanged` instead.
/// `failed` leaves out the failures a `failed` hook handled: they are `handled`.
/// `bytes` are the body bytes received in this run.
public struct RunSummary: Sendable, Hashable {
    public var finished = 0
    public var failed = 0
    /// Failures a `failed` hook dealt with (`FailureVerdict.handled`).
    public var handled = 0
    public var skipped = 0
    public var cancelled = 0
    public var unchanged = 0
    public var bytes: Int64 = 0
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
    public init() {}
}

/// A lifecycle event. Every download gets exactly one terminal event:
/// `finished`, `failed`, `handled`, `skipped`, `cancelled` or `stopped`.
public enum DownloadEvent: Sendable {
    /// Queued (emitted once, when the engine accepts the request).
    case queued(DownloadInfo)
    /// The final response of an attempt arrived; no body byte is written yet.
    case response(DownloadInfo, ResponseInfo)
    /// Bytes arrived (coalesced: a few per second per transfer).
    case progress(DownloadInfo, ProgressInfo)
    /// An attempt failed and another one follows after `delay` seconds.
    case retrying(DownloadInfo, DownloadError, delay: Double)
    /// Paused by the caller or a hook; the part file stays until `resume`.
    case paused(DownloadInfo)
    /// Terminal: the file is in place under its final name.
    case finished(DownloadInfo, FinishedInfo)
    /// Terminal: no more attempts.
    case failed(DownloadInfo, DownloadError)
    /// Terminal: failed, and a `failed` hook dealt with it (a fallback); not a failure of the run.
    case handled(DownloadInfo, DownloadError)
    /// Terminal: a hook skipped it; nothing was written.
    case skipped(DownloadInfo, reason: String)
    /// Terminal: cancelled by the caller or a hook; the part file is removed.
    case cancelled(DownloadInfo)
    /// Terminal: the engine stopped (`stop()`, `shutdown()`) while the download
    /// was open; its part file stays for a later run to resume. Published for
    /// every open download just before the event streams end.
    case stopped(DownloadInfo)
    /// The queue is empty and no hook added more work.
    case drained(RunSummary)

    /// The download the event is about (nil for `drained`).
    public var download: DownloadInfo? {
        switch self {
        case .queued(let d), .response(let d, _), .progress(let d, _), .retrying(let d, _, _),
            .paused(let d),
            .finished(let d, _), .failed(let d, _), .handled(let d, _), .skipped(let d, _), .cancelled(let d),
            .stopped(let d):
            return d
        case .drained: return nil
        }
    }

    /// Whether this is the last event of its download.
    public var isTerminal: Bool {
        switch self {
        case .finished, .failed, .handled, .skipped, .cancelled, .stopped: return true
        default: return false
        }
    }
}

/// How a download ended: the outcome of its terminal event.
public enum DownloadOutcome: Sendable, Hashable {
    /// The file is in place (`DownloadEvent.finished`).
    case finished(FinishedInfo)
    /// No more attempts (`DownloadEvent.failed`).
    case failed(DownloadError)
    /// Failed, and a `failed` hook dealt with it (`DownloadEvent.handled`).
    case handled(DownloadError)
    /// A hook skipped it, with its reason (`DownloadEvent.skipped`).
    case skipped(String)
    /// Cancelled by the caller or a hook; the part file is removed.
    case cancelled
    /// The engine stopped first: open at the stop, or added after it (such a
    /// download never starts). A part file stays.
    case stopped
}
