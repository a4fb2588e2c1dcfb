/// What a `response` hook decided.
public enum ResponseVerdict: Sendable, Hashable {
    /// Go on; a non-nil name or directory renames the target before a byte is written.
    case proceed(name: String? = nil, directory: String? = nil)
    /// Skip: abort the transfer, write nothing.
    case skip(reason: String)
    /// The hook itself failed: the download fails with kind `hook`.
    case fail(DownloadError)
}

/// What a `finished` hook decided.
public enum FinishedVerdict: Sendable, Hashable {
    /// Keep the file where it is, or move it when a name or directory is given.
    /// `sha256` is the file's digest when the hook computed it (a handler read
    /// `f.sha256`): the state keeps it, and a later run reports it unchanged.
    case keep(name: String? = nil, directory: String? = nil, sha256: String? = nil)
    /// The hook failed: the download fails with kind `hook` (the file stays).
    case fail(DownloadError)
}

/// What a `retrying` hook decided, before a retry the policy grants.
public enum RetryVerdict: Sendable, Hashable {
    /// Retry after the policy's delay.
    case proceed
    /// Retry after this many seconds instead.
    case delay(Double)
    /// No retry: the download fails now (and the `failed` hook runs).
    case giveUp
    /// The hook itself failed: the download fails with kind `hook`, no retry.
    case fail(DownloadError)
}

/// What a `failed` hook decided, once no retry follows.
public enum FailureVerdict: Sendable, Hashable {
    /// The failure stands.
    case giveUp
    /// Retry after this many seconds although the retry budget is spent (at
    /// most `JobState.hookRetryCap` times per download).
    case retry(after: Double)
    /// The hook dealt with the failure (a fallback): the download ends
    /// `handled`, which the summary, the exit status and `-q` do not count as failed.
    case handled
}

/// The events a hook implementation wants; the engine never pays for the others.
public struct HookInterests: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let response = HookInterests(rawValue: 1)
    public static let progress = HookInterests(rawValue: 2)
    public static let finished = HookInterests(rawValue: 4)
    public static let failed = HookInterests(rawValue: 8)
    public static let drained = HookInterests(rawValue: 16)
    public static let retrying = HookInterests(rawValue: 32)
    /// Before every request (each attempt, each redirect hop). Without it no
    /// request waits for a hook.
    public static let request = HookInterests(rawValue: 64)
}

/// The plug-in point for scripts: the engine calls these and waits for `reply`
/// without blocking its own thread, so one slow hook never stalls other transfers.
/// Calls arrive from the engine's thread; implementations hand them to their own
/// executor and call `reply` exactly once, from any thread.
public protocol DownloadHooks: AnyObject, Sendable {
    /// Which of the calls below are wanted.
    var interests: HookInterests { get }
    /// Before any body byte is written. The transfer is paused meanwhile.
    func response(
        _ download: DownloadInfo, _ response: ResponseInfo,
        reply: @escaping @Sendable (ResponseVerdict) -> Void)
    /// Coalesced progress; no reply.
    func progress(_ download: DownloadInfo, _ progress: ProgressInfo)
    /// After the file is in place under its final name.
    func finished(
        _ download: DownloadInfo, _ result: FinishedInfo,
        reply: @escaping @Sendable (FinishedVerdict) -> Void)
    /// An attempt failed and the retry policy grants another after `delay`
    /// seconds: the hook may change the delay or give up.
    func retrying(
        _ download: DownloadInfo, _ error: DownloadError, delay: Double,
        reply: @escaping @Sendable (RetryVerdict) -> Void)
    /// The download failed and no retry follows (once per download, unless the
    /// hook retries): the hook may retry past the budget or mark it handled.
    func failed(
        _ download: DownloadInfo, _ error: DownloadError,
        reply: @escaping @Sendable (FailureVerdict) -> Void)
    /// When the queue drains; the reply may carry an exit code. Downloads added
    /// before replying keep the run going.
    func drained(_ summary: RunSummary, reply: @escaping @Sendable (Int?) -> Void)
    /// Before a request goes out (every attempt and every redirect hop): the
    /// reply gives the headers of this hop. The request waits meanwhile.
    func request(
        _ download: DownloadInfo, _ request: RequestInfo,
        reply: @escaping @Sendable (RequestVerdict) -> Void)
    /// The engine has made every call of one loop turn. An implementation that
    /// hands calls to another thread may queue them until now and hand them over
    /// as one batch (one wake-up per turn instead of one per call).
    func endOfTurn()
}

extension DownloadHooks {
    public func response(
        _ download: DownloadInfo, _ response: ResponseInfo,
        reply: @escaping @Sendable (ResponseVerdict) -> Void
    ) { reply(.proceed()) }
    public func progress(_ download: DownloadInfo, _ progress: ProgressInfo) {}
    public func request(
        _ download: DownloadInfo, _ request: RequestInfo,
        reply: @escaping @Sendable (RequestVerdict) -> Void
    ) { reply(.send(headers: request.headers)) }
    public func endOfTurn() {}
    public func finished(
        _ download: DownloadInfo, _ result: FinishedInfo,
        reply: @escaping @Sendable (FinishedVerdict) -> Void
    ) { reply(.keep()) }
    public func retrying(
        _ download: DownloadInfo, _ error: DownloadError, delay: Double,
        reply: @escaping @Sendable (RetryVerdict) -> Void
    ) { reply(.proceed) }
    public func failed(
        _ download: DownloadInfo, _ error: DownloadError,
        reply: @escaping @Sendable (FailureVerdict) -> Void
    ) { reply(.giveUp) }
    public func drained(_ summary: RunSummary, reply: @escaping @Sendable (Int?) -> Void) {
        reply(nil)
    }
}
