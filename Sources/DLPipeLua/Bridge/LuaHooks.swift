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
    private typealias Call = @Sendable (inout [any HandlerReply]) -> Void
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
        _ event: String, _ download: DownloadInfo?, _ argument: EventArgument, abandon: any HandlerReply
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
            var replies: [any HandlerReply] = []
            replies.reserveCapacity(batch.count)
            for work in batch { work(&replies) }
            for reply in replies { reply.sendHeld() }
        }
    }

    func response(_ download: DownloadInfo, _ response: ResponseInfo, reply: @escaping @Sendable (ResponseVerdict) -> Void) {
        let reply = ReplyOnce(reply) { .fail(DownloadError(.hook, $0)) }
        enqueue { [self] replies in
            let outcome = dispatch("response", download, .response(response), abandon: reply)
            let verdict: ResponseVerdict
            if let error = outcome.error {
                verdict = .fail(DownloadError(.hook, error.message))
            } else if outcome.verdict == "skip" {
                verdict = .skip(reason: outcome.extra.text ?? "skipped by a hook")
            } else {
                verdict = outcome.renamed ? .proceed(name: outcome.name, directory: outcome.directory ?? "") : .proceed()
            }
            reply.hold(verdict)
            replies.append(reply)
        }
    }

    func request(_ download: DownloadInfo, _ request: RequestInfo, reply: @escaping @Sendable (RequestVerdict) -> Void) {
        let reply = ReplyOnce(reply) { .fail(DownloadError(.hook, $0)) }
        enqueue { [self] replies in
            let outcome = dispatch("request", download, .request(request), abandon: reply)
            let verdict: RequestVerdict
            if let error = outcome.error {
                verdict = .fail(DownloadError(.hook, error.message))
            } else {
                switch RequestHeaders.read(outcome.requestHeaders) {
                case .success(let headers): verdict = .send(headers: headers)
                case .failure(let problem): verdict = .fail(DownloadError(.hook, problem.message))
                }
            }
            reply.hold(verdict)
            replies.append(reply)
        }
    }

    func progress(_ download: DownloadInfo, _ progress: ProgressInfo) {
        let first = pendingProgress.withLock { pending in
            defer { pending[download.id] = (download, progress) }
            return pending[download.id] == nil
        }
        guard first else { return }  // a call is queued already; it will take the latest values
        // Only the id is captured: the values are in `pendingProgress` (a copy of the
        // download's fields here cost a retain of each).
        let id = download.id
        enqueue { [self] _ in
            guard let (download, progress) = pendingProgress.withLock({ $0.removeValue(forKey: id) }) else { return }
            let outcome = dispatch("progress", download, .progress(progress), abandon: FailOnAbandon(host.engine, download.id))
            if let error = outcome.error { host.engine?.fail(download.id, DownloadError(.hook, error.message)) }
        }
    }

    func finished(_ download: DownloadInfo, _ result: FinishedInfo, reply: @escaping @Sendable (FinishedVerdict) -> Void) {
        let reply = ReplyOnce(reply) { .fail(DownloadError(.hook, $0)) }
        enqueue { [self] replies in
            let outcome = dispatch("finished", download, .finished(result), abandon: reply)
            let verdict: FinishedVerdict
            if let error = outcome.error {
                verdict = .fail(DownloadError(.hook, error.message))
            } else {
                let digest = host.takeComputedDigest(of: result.path)
                verdict = outcome.renamed
                    ? .keep(name: outcome.name, directory: outcome.directory ?? "", sha256: digest) : .keep(sha256: digest)
            }
            reply.hold(verdict)
            replies.append(reply)
        }
    }

    /// After every `finished` handler (the job's, then the hooks'), with the
    /// file where it ended up. Nothing to decide: an error is reported, and
    /// the download stays finished.
    func placed(_ download: DownloadInfo, _ result: FinishedInfo, reply: @escaping @Sendable () -> Void) {
        let id = download.id
        let reply = ReplyOnce<Bool>({ _ in reply() }) { [report] in
            report("placed handler for download \(id): \($0)")
            return true
        }
        enqueue { [self] replies in
            let outcome = dispatch("placed", download, .finished(result), abandon: reply)
            if let error = outcome.error, !reply.answered {
                report("placed handler for download \(download.id): \(error.message)")
            }
            reply.hold(true)
            replies.append(reply)
        }
    }

    func retrying(_ download: DownloadInfo, _ error: DownloadError, delay: Double, reply: @escaping @Sendable (RetryVerdict) -> Void) {
        let reply = ReplyOnce(reply) { .fail(DownloadError(.hook, $0)) }
        enqueue { [self] replies in
            let outcome = dispatch("retrying", download, .failure(error, attempt: download.attempt, retryAfter: delay), abandon: reply)
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
            reply.hold(verdict)
            replies.append(reply)
        }
    }

    func failed(_ download: DownloadInfo, _ error: DownloadError, reply: @escaping @Sendable (FailureVerdict) -> Void) {
        let id = download.id
        let reply = ReplyOnce<FailureVerdict>(reply) { [report] in
            report("failed handler for download \(id): \($0)")
            return .giveUp
        }
        enqueue { [self] replies in
            let outcome = dispatch("failed", download, .failure(error, attempt: download.attempt, retryAfter: error.retryAfter), abandon: reply)
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
            reply.hold(verdict)
            replies.append(reply)
        }
    }

    func drained(_ summary: RunSummary, reply: @escaping @Sendable (Int?) -> Void) {
        let reply = ReplyOnce<Int?>(reply) { [report] in
            report("done handler: \($0)")
            return nil
        }
        enqueue { [self] replies in
            let outcome = dispatch("done", nil, .summary(summary), abandon: reply)
            if let error = outcome.error, !reply.answered { report("done handler: \(error.message)") }
            // A code an earlier handler returned stands even when a later one failed.
            let code = outcome.verdict == "exit" ? outcome.extra.int.map { Int($0) } : nil
            reply.hold(code)
            replies.append(reply)
        }
    }
}

/// A progress handler given up on fails its download: progress has no reply to send.
private final class FailOnAbandon: HandlerReply {
    private let engine: DownloadEngine?
    private let id: DownloadID

    init(_ engine: DownloadEngine?, _ id: DownloadID) {
        self.engine = engine
        self.id = id
    }

    func abandon(_ message: String) { engine?.fail(id, DownloadError(.hook, message)) }
    func sendHeld() {}
}
