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

/// The plug-in point for scripts and programs that decide about downloads:
/// one optional closure per event. A closure left nil is not asked, and its
/// event goes the default way (proceed, keep, retry as the policy says, let
/// the failure stand); the engine then pays nothing for it.
///
/// The engine never waits for a hook: each call comes on the engine's thread
/// and must return at once, handing the decision to an executor of its own;
/// the decision comes back through `reply`, from any thread, later. Call
/// `reply` exactly once: a second reply is ignored (and counted in
/// `DownloadEngine.ignoredHookReplies`), and a call with no reply within
/// `EngineConfiguration.hookDeadline` fails its download with kind `hook`.
///
/// An actor fits without `nonisolated`: the closures hop onto it.
///
/// ```swift
/// actor Gatekeeper { func allows(_ r: ResponseInfo) -> Bool { r.type.hasPrefix("image/") } }
/// let keeper = Gatekeeper()
/// let hooks = DownloadHooks(response: { _, response, reply in
///     Task { reply(await keeper.allows(response) ? .proceed() : .skip(reason: "not an image")) }
/// })
/// ```
public struct DownloadHooks: Sendable {
    /// Before any body byte is written; the transfer is paused until the reply.
    public var response:
        (@Sendable (DownloadInfo, ResponseInfo, _ reply: @escaping @Sendable (ResponseVerdict) -> Void) -> Void)?
    /// Coalesced progress (every `EngineConfiguration.progressInterval` per
    /// transfer); no reply. Nil: progress costs no hook call at all.
    public var progress: (@Sendable (DownloadInfo, ProgressInfo) -> Void)?
    /// After the file is in place under its final name.
    public var finished:
        (@Sendable (DownloadInfo, FinishedInfo, _ reply: @escaping @Sendable (FinishedVerdict) -> Void) -> Void)?
    /// An attempt failed and the retry policy grants another after `delay`
    /// seconds: the hook may change the delay or give up.
    public var retrying:
        (@Sendable (DownloadInfo, DownloadError, _ delay: Double, _ reply: @escaping @Sendable (RetryVerdict) -> Void)
            -> Void)?
    /// The download failed and no retry follows (once per download, unless the
    /// hook retries): the hook may retry past the budget or mark it handled.
    public var failed:
        (@Sendable (DownloadInfo, DownloadError, _ reply: @escaping @Sendable (FailureVerdict) -> Void) -> Void)?
    /// When the queue drains; the reply may carry an exit code. Downloads added
    /// before replying keep the run going.
    public var drained: (@Sendable (RunSummary, _ reply: @escaping @Sendable (Int?) -> Void) -> Void)?
    /// The engine has made every call of one loop turn. An implementation that
    /// hands calls to another thread may queue them until now and hand them over
    /// as one batch (one wake-up per turn instead of one per call).
    public var endOfTurn: (@Sendable () -> Void)?
    /// Before a request goes out (every attempt's first hop and every redirect
    /// hop): the reply gives the headers of that hop, and the request waits
    /// for it (its slot stays taken). Nil: no request waits for a hook.
    public var request:
        (@Sendable (DownloadInfo, RequestInfo, _ reply: @escaping @Sendable (RequestVerdict) -> Void) -> Void)?
    /// After the `finished` hook's verdict was carried out (the file moved
    /// where it asked): the file under its final name, for a hook that
    /// records where files end up. The reply says the hook is done (the run
    /// does not drain before it); it decides nothing.
    public var placed: (@Sendable (DownloadInfo, FinishedInfo, _ reply: @escaping @Sendable () -> Void) -> Void)?

    /// Hooks with the given closures; the others stay nil (not asked).
    public init(
        response: (@Sendable (DownloadInfo, ResponseInfo, _ reply: @escaping @Sendable (ResponseVerdict) -> Void) -> Void)? = nil,
        progress: (@Sendable (DownloadInfo, ProgressInfo) -> Void)? = nil,
        finished: (@Sendable (DownloadInfo, FinishedInfo, _ reply: @escaping @Sendable (FinishedVerdict) -> Void) -> Void)? = nil,
        retrying: (@Sendable (DownloadInfo, DownloadError, _ delay: Double, _ reply: @escaping @Sendable (RetryVerdict) -> Void) -> Void)? = nil,
        failed: (@Sendable (DownloadInfo, DownloadError, _ reply: @escaping @Sendable (FailureVerdict) -> Void) -> Void)? = nil,
        drained: (@Sendable (RunSummary, _ reply: @escaping @Sendable (Int?) -> Void) -> Void)? = nil,
        endOfTurn: (@Sendable () -> Void)? = nil,
        request: (@Sendable (DownloadInfo, RequestInfo, _ reply: @escaping @Sendable (RequestVerdict) -> Void) -> Void)? = nil,
        placed: (@Sendable (DownloadInfo, FinishedInfo, _ reply: @escaping @Sendable () -> Void) -> Void)? = nil
    ) {
        self.response = response
        self.progress = progress
        self.finished = finished
        self.retrying = retrying
        self.failed = failed
        self.drained = drained
        self.endOfTurn = endOfTurn
        self.request = request
        self.placed = placed
    }

    /// The events asked, read from the closures that are set.
    var interests: HookInterests {
        var interests: HookInterests = []
        if response != nil { interests.insert(.response) }
        if progress != nil { interests.insert(.progress) }
        if finished != nil { interests.insert(.finished) }
        if retrying != nil { interests.insert(.retrying) }
        if failed != nil { interests.insert(.failed) }
        if drained != nil { interests.insert(.drained) }
        if request != nil { interests.insert(.request) }
        if placed != nil { interests.insert(.placed) }
        return interests
    }
}
