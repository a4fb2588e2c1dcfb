/// A download as hooks and observers see it at one moment (a copy: it does
/// not change when the download moves on).
public struct DownloadInfo: Sendable, Hashable {
    /// The download's id in its engine.
    public var id: DownloadID
    /// The requested URL (before redirects; `ResponseInfo.url` is after them).
    public var url: String
    /// The file name once known (after the response), else the requested one.
    public var name: String?
    /// The directory relative to the output directory ("" for the output directory).
    public var directory: String
    /// The final path once the name is known.
    public var path: String?
    /// The download whose hook added this one (`DownloadRequest.parent`).
    public var parent: DownloadID?
    /// The attempt under way or last made: 1 for the first, one more per retry.
    public var attempt: Int
    /// The request's free-form values (`DownloadRequest.meta`).
    public var meta: [String: String]
    /// `DownloadRequest.metaJSON`: JSON text, or nil.
    public var metaJSON: String? = nil
    /// `DownloadRequest.depth`.
    public var depth: Int = 0
}

/// The final response of an attempt, after redirects.
///
/// `status` is what the server sent. A resumed download gets 206 with
/// `resumedFrom` set; a server that ignores the range sends 200 and the file
/// starts over. A check for "the whole file, or a resume of it" is thus
/// `response.status == 200 || (response.status == 206 && response.resumedFrom != nil)`,
/// or simply `response.isWholeOrResumed`.
public struct ResponseInfo: Sendable, Hashable {
    /// The HTTP status as the server sent it: 2xx (errors fail the attempt and
    /// never reach a `response` event), 206 for a resumed download.
    public var status: Int
    /// Header names in lower case; repeated headers joined with ", ", but
    /// `set-cookie`, whose lines are joined with "\n" (see `setCookies`).
    public var headers: [String: String]
    /// Media type without parameters, lower case ("" when absent).
    public var type: String
    /// The body length of the whole resource when known: for a resumed
    /// download, the bytes already on disk plus the 206's body.
    public var length: Int64?
    /// The server's suggested name (Content-Disposition, else the URL), already
    /// sanitised.
    public var filename: String
    /// The URL after redirects.
    public var url: String
    /// The byte this response continues the part file from: a 206 to the
    /// engine's Range request, whose body is appended to the bytes an earlier
    /// attempt (or run) left. Nil when the body is the whole file.
    public var resumedFrom: Int64?

    /// Whether the body is the whole file (200) or continues the part file
    /// from where the engine asked (206 with `resumedFrom`): the "HTTP 200"
    /// check that does not trip on a resume.
    public var isWholeOrResumed: Bool {
        status == 200 || (status == 206 && resumedFrom != nil)
    }

    /// Each `Set-Cookie` line of the response, in order (a comma cannot
    /// separate them: cookie dates hold commas).
    public var setCookies: [String] {
        headers["set-cookie"].map { $0.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) } ?? []
    }

    /// A response as the engine reports it (for tests of code that handles events).
    public init(
        status: Int, headers: [String: String] = [:], type: String = "", length: Int64? = nil,
        filename: String = "", url: String, resumedFrom: Int64? = nil
    ) {
        self.status = status
        self.headers = headers
        self.type = type
        self.length = length
        self.filename = filename
        self.url = url
        self.resumedFrom = resumedFrom
    }
}

/// A coalesced progress report: at most one per transfer every
/// `EngineConfiguration.progressInterval`, and only when bytes arrived.
public struct ProgressInfo: Sendable, Hashable {
    /// Bytes of the file so far, including the bytes a resumed download kept
    /// from an earlier attempt or run (so a resume does not start at 0).
    public var bytes: Int64
    /// The size of the whole file in bytes when the server said it (its
    /// Content-Length, plus the kept bytes for a resume: `ResponseInfo.length`);
    /// nil when unknown (a chunked body).
    public var total: Int64?
    /// Bytes per second, smoothed over the recent reports of this transfer
    /// (received bytes only; resumed bytes do not count as speed).
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
    /// The absolute path of the file under its final name.
    public var path: String
    /// The file's size in bytes.
    public var bytes: Int64
    /// Hex SHA-256 when it was computed while streaming (asked for, or verified).
    public var sha256: String?
    /// The media type without parameters ("" when the server named none).
    public var type: String
    /// Seconds from the start of the download's first attempt (when it got a
    /// transfer slot, not when it was queued) to the file in place; retries,
    /// backoff and pauses included. 0 for a file kept without a request.
    public var seconds: Double
    /// True when the server said 304 and the existing file was kept.
    public var unchanged: Bool
    /// The body of a memory download (`DownloadRequest.into == .memory`),
    /// whose `path` is ""; nil for a file.
    public var body: [UInt8]? = nil
    /// Something the user should know about where the file went: a new
    /// version beside a file the user changed since an earlier run placed it
    /// (the command line prints it as a warning). Nil otherwise.
    public var warning: String? = nil
    /// The headers of the final response, as `ResponseInfo.headers` (a
    /// `finished` handler reads its `Link` there): the one that gave the body,
    /// or the 304 that kept the file; empty for a file kept without a request.
    public var headers: [String: String] = [:]
    /// True when the file was kept (`unchanged`) after its bytes were hashed
    /// again and matched the SHA-256 known for it (`verify`): it was checked
    /// by validators and content, not by validators alone.
    public var contentVerified = false
    /// False for a file kept without a request (refresh "never"): no
    /// validator was checked, only the content when `contentVerified`.
    public var askedServer = true

    /// Each `Set-Cookie` line of `headers`, in order (as `ResponseInfo.setCookies`).
    public var setCookies: [String] {
        headers["set-cookie"].map { $0.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) } ?? []
    }
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
