import DLPipe
import Synchronization

/// The engine's hooks, answered by Lua handlers on the Lua thread. The engine
/// never waits: each call is queued to the Lua thread and replies when done.
final class LuaHooks: DownloadHooks, @unchecked Sendable {
    // @unchecked: `host` is used only on `thread`; the rest is immutable or a Mutex.
    let interests: HookInterests
    private let host: ScriptHost
    private let thread: LuaThread
    /// Latest progress per download not yet handed to Lua (coalescing).
    private let pendingProgress = Mutex<[DownloadID: (DownloadInfo, ProgressInfo)]>([:])
    /// Where hook errors that cannot fail a download (done handlers) are reported.
    private let report: @Sendable (String) -> Void

    init(host: ScriptHost, thread: LuaThread, counts: [String: Int], report: @escaping @Sendable (String) -> Void) {
        self.host = host
        self.thread = thread
        self.report = report
        var interests: HookInterests = []
        if counts["response", default: 0] > 0 { interests.insert(.response) }
        if counts["progress", default: 0] > 0 { interests.insert(.progress) }
        if counts["finished", default: 0] > 0 { interests.insert(.finished) }
        if counts["failed", default: 0] > 0 { interests.insert(.failed) }
        if counts["done", default: 0] > 0 { interests.insert(.drained) }
        self.interests = interests
    }

    func response(_ download: DownloadInfo, _ response: ResponseInfo, reply: @escaping @Sendable (ResponseVerdict) -> Void) {
        thread.async { [self] in
            let outcome = host.dispatch("response", download: LuaArguments.download(download), argument: LuaArguments.response(response))
            if let error = outcome.error { return reply(.fail(DownloadError(.hook, error.message))) }
            if outcome.verdict == "skip" { return reply(.skip(reason: outcome.extra.text ?? "skipped by a hook")) }
            reply(outcome.renamed ? .proceed(name: outcome.name, directory: outcome.directory ?? "") : .proceed())
        }
    }

    func progress(_ download: DownloadInfo, _ progress: ProgressInfo) {
        let first = pendingProgress.withLock { pending in
            defer { pending[download.id] = (download, progress) }
            return pending[download.id] == nil
        }
        guard first else { return }  // a call is queued already; it will take the latest values
        thread.async { [self] in
            guard let (download, progress) = pendingProgress.withLock({ $0.removeValue(forKey: download.id) }) else { return }
            let outcome = host.dispatch("progress", download: LuaArguments.download(download), argument: LuaArguments.progress(progress))
            if let error = outcome.error { host.engine?.fail(download.id, DownloadError(.hook, error.message)) }
        }
    }

    func finished(_ download: DownloadInfo, _ result: FinishedInfo, reply: @escaping @Sendable (FinishedVerdict) -> Void) {
        thread.async { [self] in
            let outcome = host.dispatch("finished", download: LuaArguments.download(download), argument: LuaArguments.finished(result))
            if let error = outcome.error { return reply(.fail(DownloadError(.hook, error.message))) }
            reply(outcome.renamed ? .keep(name: outcome.name, directory: outcome.directory ?? "") : .keep())
        }
    }

    func failed(_ download: DownloadInfo, _ error: DownloadError, retrying: Bool, reply: @escaping @Sendable (FailureVerdict) -> Void) {
        thread.async { [self] in
            let outcome = host.dispatch("failed", download: LuaArguments.download(download), argument: LuaArguments.failure(error, attempt: download.attempt, retrying: retrying))
            if let failure = outcome.error {
                report("failed handler for download \(download.id): \(failure.message)")
                return reply(.giveUp)
            }
            switch outcome.verdict {
            case "retry": reply(.retry(after: outcome.extra.double ?? 0))
            case "giveup": reply(.giveUp)
            default: reply(.policy)
            }
        }
    }

    func drained(_ summary: RunSummary, reply: @escaping @Sendable (Int?) -> Void) {
        thread.async { [self] in
            let outcome = host.dispatch("done", download: nil, argument: LuaArguments.summary(summary))
            if let error = outcome.error {
                report("done handler: \(error.message)")
                return reply(nil)
            }
            reply(outcome.verdict == "exit" ? outcome.extra.int.map { Int($0) } : nil)
        }
    }
}

/// Event arguments as Lua tables (SPEC 1.2).
enum LuaArguments {
    private static func table(_ pairs: [(String, LuaValue?)]) -> LuaValue {
        var table: [LuaValue: LuaValue] = [:]
        for (key, value) in pairs { if let value { table[LuaValue(key)] = value } }
        return .table(table)
    }

    private static func text(_ s: String?) -> LuaValue? { s.map { LuaValue($0) } }
    private static func int<T: BinaryInteger>(_ n: T?) -> LuaValue? { n.map { .integer(Int64($0)) } }

    static func download(_ d: DownloadInfo) -> LuaValue {
        table([("id", int(d.id.rawValue)), ("url", text(d.url)), ("name", text(d.name)), ("dir", text(d.directory)),
               ("path", text(d.path)), ("parent", int(d.parent?.rawValue)), ("attempt", int(d.attempt))])
    }

    static func response(_ r: ResponseInfo) -> LuaValue {
        var headers: [LuaValue: LuaValue] = [:]
        for (key, value) in r.headers { headers[LuaValue(key)] = LuaValue(value) }
        return table([("status", int(r.status)), ("headers", .table(headers)), ("type", text(r.type)),
                      ("length", int(r.length)), ("filename", text(r.filename)), ("url", text(r.url))])
    }

    static func progress(_ p: ProgressInfo) -> LuaValue {
        table([("bytes", int(p.bytes)), ("total", int(p.total)), ("fraction", p.fraction.map { .number($0) }),
               ("rate", .number(p.rate)), ("eta", p.eta.map { .number($0) })])
    }

    static func finished(_ f: FinishedInfo) -> LuaValue {
        table([("path", text(f.path)), ("bytes", int(f.bytes)), ("sha256", text(f.sha256)), ("type", text(f.type)),
               ("seconds", .number(f.seconds)), ("unchanged", .boolean(f.unchanged))])
    }

    static func failure(_ e: DownloadError, attempt: Int, retrying: Bool) -> LuaValue {
        table([("kind", text(e.kind.rawValue)), ("message", text(e.message)), ("status", int(e.status)),
               ("attempt", int(attempt)), ("retrying", .boolean(retrying)), ("retry_after", e.retryAfter.map { .number($0) })])
    }

    static func summary(_ s: RunSummary) -> LuaValue {
        table([("finished", int(s.finished)), ("failed", int(s.failed)), ("skipped", int(s.skipped)),
               ("unchanged", int(s.unchanged)), ("cancelled", int(s.cancelled)), ("bytes", int(s.bytes)),
               ("seconds", .number(s.seconds))])
    }
}
