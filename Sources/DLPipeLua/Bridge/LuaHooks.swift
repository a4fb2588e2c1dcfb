import DLPipe
import Synchronization

/// The engine's hooks, answered by Lua handlers on the Lua thread. The engine
/// never waits: each call is queued to the Lua thread and replies when done.
final class LuaHooks: @unchecked Sendable {
    // @unchecked: `host` is used only on `thread`; the rest is immutable or a Mutex.
    /// Handlers per event name, from the scripts: only events with one are asked.
    private let counts: [String: Int]
    private let host: ScriptHost
    private let thread: LuaThread
    /// Latest progress per download not yet handed to Lua (coalescing).
    private let pendingProgress = Mutex<[DownloadID: (DownloadInfo, ProgressInfo)]>([:])
    /// Calls of the engine's current loop turn, handed to the Lua thread together
    /// at `endOfTurn`: one wake-up of that thread per turn, not one per event.
    /// Each call leaves its reply in the batch's list instead of sending it, and
    /// the replies go out together when the batch is done: the engine then wakes
    /// once per batch, not once per reply.
    private typealias Call = @Sendable (inout [@Sendable () -> Void]) -> Void
    private let turn = Mutex<[Call]>([])
    /// Where hook errors that cannot fail a download (done handlers) are reported.
    private let report: @Sendable (String) -> Void
    /// Answers for handlers that overran their budget where nothing could stop them.
    private let backstop: HandlerBackstop

    init(host: ScriptHost, thread: LuaThread, counts: [String: Int], backstop: HandlerBackstop,
         report: @escaping @Sendable (String) -> Void) {
        self.host = host
        self.thread = thread
        self.report = report
        self.backstop = backstop
        self.counts = counts
    }

    /// The engine's hooks: a closure for each event a script handles, none for
    /// the others (the engine then never asks, and progress costs nothing).
    var downloadHooks: DownloadHooks {
        func handles(_ event: String) -> Bool { counts[event, default: 0] > 0 }
        var hooks = DownloadHooks(endOfTurn: { self.endOfTurn() })
        if handles("response") { hooks.response = { self.response($0, $1, reply: $2) } }
        if handles("progress") { hooks.progress = { self.progress($0, $1) } }
        if handles("finished") { hooks.finished = { self.finished($0, $1, reply: $2) } }
        if handles("retrying") { hooks.retrying = { self.retrying($0, $1, delay: $2, reply: $3) } }
        if handles("failed") { hooks.failed = { self.failed($0, $1, reply: $2) } }
        if handles("done") { hooks.drained = { self.drained($0, reply: $1) } }
        if handles("request") { hooks.request = { self.request($0, $1, reply: $2) } }
        if handles("placed") { hooks.placed = { self.placed($0, $1, reply: $2) } }
        return hooks
    }

    /// Runs the handlers of one event with the backstop watching: if they overrun their
    /// budget past its grace, `abandon` answers for them (on the backstop's thread).
    private func dispatch(
        _ event: String, _ download: DownloadInfo?, _ argument: EventArgument,
        abandon: @escaping @Sendable (String) -> Void
    ) -> DispatchOutcome {
        backstop.watch(event: event, abandon: abandon)
        defer { backstop.unwatch() }
        return host.dispatch(event, download: download, argument: argument)
    }

    private func enqueue(_ work: @escaping Call) {
        turn.withLock { $0.append(work) }
    }

    func endOfTurn() {
        let batch = turn.takeAll()
        guard !batch.isEmpty else { return }
        thread.async {
            var replies: [@Sendable () -> Void] = []
            for work in batch { work(&replies) }
            for reply in replies { reply() }
        }
    }

    func response(_ download: DownloadInfo, _ response: ResponseInfo, reply: @escaping @Sendable (ResponseVerdict) -> Void) {
        let reply = ReplyOnce(reply)
        enqueue { [self] replies in
            let outcome = dispatch("response", download, .response(response)) { reply(.fail(DownloadError(.hook, $0))) }
            let verdict: ResponseVerdict
            if let error = outcome.error {
                verdict = .fail(DownloadError(.hook, error.message))
            } else if outcome.verdict == "skip" {
                verdict = .skip(reason: outcome.extra.text ?? "skipped by a hook")
            } else {
                verdict = outcome.renamed ? .proceed(name: outcome.name, directory: outcome.directory ?? "") : .proceed()
            }
            replies.append { reply(verdict) }
        }
    }

    func request(_ download: DownloadInfo, _ request: RequestInfo, reply: @escaping @Sendable (RequestVerdict) -> Void) {
        let reply = ReplyOnce(reply)
        enqueue { [self] replies in
            let outcome = dispatch("request", download, .request(request)) { reply(.fail(DownloadError(.hook, $0))) }
            let verdict: RequestVerdict
            if let error = outcome.error {
                verdict = .fail(DownloadError(.hook, error.message))
            } else {
                switch RequestHeaders.read(outcome.requestHeaders) {
                case .success(let headers): verdict = .send(headers: headers)
                case .failure(let problem): verdict = .fail(DownloadError(.hook, problem.message))
                }
            }
            replies.append { reply(verdict) }
        }
    }

    func progress(_ download: DownloadInfo, _ progress: ProgressInfo) {
        let first = pendingProgress.withLock { pending in
            defer { pending[download.id] = (download, progress) }
            return pending[download.id] == nil
        }
        guard first else { return }  // a call is queued already; it will take the latest values
        enqueue { [self] _ in
            guard let (download, progress) = pendingProgress.withLock({ $0.removeValue(forKey: download.id) }) else { return }
            let engine = host.engine
            let outcome = dispatch("progress", download, .progress(progress)) { engine?.fail(download.id, DownloadError(.hook, $0)) }
            if let error = outcome.error { host.engine?.fail(download.id, DownloadError(.hook, error.message)) }
        }
    }

    func finished(_ download: DownloadInfo, _ result: FinishedInfo, reply: @escaping @Sendable (FinishedVerdict) -> Void) {
        let reply = ReplyOnce(reply)
        enqueue { [self] replies in
            let outcome = dispatch("finished", download, .finished(result)) { reply(.fail(DownloadError(.hook, $0))) }
            let verdict: FinishedVerdict
            if let error = outcome.error {
                verdict = .fail(DownloadError(.hook, error.message))
            } else {
                let digest = host.takeComputedDigest(of: result.path)
                verdict = outcome.renamed
                    ? .keep(name: outcome.name, directory: outcome.directory ?? "", sha256: digest) : .keep(sha256: digest)
            }
            replies.append { reply(verdict) }
        }
    }

    /// After every `finished` handler (the job's, then the hooks'), with the
    /// file where it ended up. Nothing to decide: an error is reported, and
    /// the download stays finished.
    func placed(_ download: DownloadInfo, _ result: FinishedInfo, reply: @escaping @Sendable () -> Void) {
        let reply = ReplyOnce<Bool> { _ in reply() }
        enqueue { [self] replies in
            let outcome = dispatch("placed", download, .finished(result)) { [report] in
                report("placed handler for download \(download.id): \($0)")
                reply(true)
            }
            if let error = outcome.error, !reply.answered {
                report("placed handler for download \(download.id): \(error.message)")
            }
            replies.append { reply(true) }
        }
    }

    func retrying(_ download: DownloadInfo, _ error: DownloadError, delay: Double, reply: @escaping @Sendable (RetryVerdict) -> Void) {
        let reply = ReplyOnce(reply)
        enqueue { [self] replies in
            let outcome = dispatch("retrying", download, .failure(error, attempt: download.attempt, retryAfter: delay)) {
                reply(.fail(DownloadError(.hook, $0)))
            }
            let verdict: RetryVerdict
            if let failure = outcome.error {
                verdict = .fail(DownloadError(.hook, failure.message))
            } else {
                switch outcome.verdict {
                case "retry": verdict = .delay(outcome.extra.double ?? 0)
                case "giveup": verdict = .giveUp
                default: verdict = .proceed
                }
            }
            replies.append { reply(verdict) }
        }
    }

    func failed(_ download: DownloadInfo, _ error: DownloadError, reply: @escaping @Sendable (FailureVerdict) -> Void) {
        let reply = ReplyOnce(reply)
        enqueue { [self] replies in
            let outcome = dispatch("failed", download, .failure(error, attempt: download.attempt, retryAfter: error.retryAfter)) { [report] in
                report("failed handler for download \(download.id): \($0)")
                reply(.giveUp)
            }
            let verdict: FailureVerdict
            if let failure = outcome.error {
                if !reply.answered { report("failed handler for download \(download.id): \(failure.message)") }
                verdict = .giveUp
            } else {
                switch outcome.verdict {
                case "retry": verdict = .retry(after: outcome.extra.double ?? 0)
                case "handled": verdict = .handled
                default: verdict = .giveUp
                }
            }
            replies.append { reply(verdict) }
        }
    }

    func drained(_ summary: RunSummary, reply: @escaping @Sendable (Int?) -> Void) {
        let reply = ReplyOnce(reply)
        enqueue { [self] replies in
            let outcome = dispatch("done", nil, .summary(summary)) { [report] in
                report("done handler: \($0)")
                reply(nil)
            }
            if let error = outcome.error, !reply.answered { report("done handler: \(error.message)") }
            // A code an earlier handler returned stands even when a later one failed.
            let code = outcome.verdict == "exit" ? outcome.extra.int.map { Int($0) } : nil
            replies.append { reply(code) }
        }
    }
}
