import DLPipe
import Foundation
import Synchronization

/// The last line of defence against a handler that does not return: one that sits in a call
/// neither the count hook nor the watchdog can interrupt (Swift code behind `dl.*`, such as
/// hashing a huge file for `f.sha256`, runs with the hook unable to fire).
///
/// Ten times a second it reads the Lua thread's `LuaCallMonitor`. Once the running call
/// is `grace` seconds past its deadline, its event is answered without it: the download fails
/// with kind `hook` and a message naming the script's line and the function it is stuck in,
/// and the engine goes on (a late answer is dropped). Every later event waits for the Lua
/// thread; if the call has still not returned `stuckLimit` seconds later, `endRun` is told,
/// and the run ends early, cleanly (the command line stops the engine and exits 1).
final class HandlerBackstop: Sendable {
    /// Past the budget, how long a call may take before it is no longer waited for. The
    /// watchdog stops Lua code within a tenth of a second of the deadline, but one instruction
    /// may run for seconds (a comparison of two strings near the memory cap: over 2 s on a
    /// loaded machine, where a grace of 2 s gave up on it); this is for what cannot be stopped.
    static let grace: Double = 5
    /// How long after that the run waits for the stuck call before it ends early.
    static let stuckLimit: Double = 10

    /// The event whose handlers run now, and how to answer it without them.
    private struct Watched {
        let event: String
        let abandon: any HandlerReply
    }

    private struct State {
        var current: Watched?
        /// The call given up on, when, and what was said of it.
        var abandoned: (sequence: UInt64, at: Date, message: String)?
        var ended = false
        var endRun: (@Sendable (String) -> Void)?
    }

    private let monitor: LuaCallMonitor
    private let state = Mutex(State())

    init(monitor: LuaCallMonitor) {
        self.monitor = monitor
        let thread = Thread { [weak self] in
            ThreadName.set("dlpipe-backstop")
            while true {
                Thread.sleep(forTimeInterval: 0.1)
                guard let self else { return }
                self.check()
            }
        }
        thread.stackSize = 256 << 10
        thread.start()
    }

    /// What to do when a stuck call does not return at all (the command line ends the run).
    func whenStuck(_ action: @escaping @Sendable (String) -> Void) {
        state.withLock { $0.endRun = action }
    }

    /// On the Lua thread, around the handlers of one event.
    func watch(event: String, abandon: any HandlerReply) {
        state.withLock { $0.current = Watched(event: event, abandon: abandon) }
    }

    func unwatch() {
        state.withLock { $0.current = nil }
    }

    private func check() {
        guard let overdue = monitor.overdue(grace: Self.grace) else { return }
        let action: (@Sendable (String) -> Void, String)? = state.withLock { s in
            if let abandoned = s.abandoned, abandoned.sequence == overdue.sequence {
                guard !s.ended, Date().timeIntervalSince(abandoned.at) >= Self.stuckLimit, let endRun = s.endRun else { return nil }
                s.ended = true
                return (endRun, abandoned.message + "; it has not returned \(Int(Self.stuckLimit)) s later")
            }
            // Still the same call? (The Lua thread ends it before it stops watching its
            // event, which needs this lock: the event taken here is the overdue call's.)
            guard monitor.isRunning(overdue.sequence) else { return nil }
            let event = s.current?.event
            let message = Self.message(overdue, event: event)
            s.abandoned = (overdue.sequence, Date(), message)
            guard let current = s.current else { return nil }
            s.current = nil
            let reply = current.abandon
            return ({ reply.abandon($0) }, message)
        }
        if let (act, message) = action { act(message) }
    }

    /// "job.lua:6: a finished handler did not return within its time budget of 1 s (stuck in
    /// dl.sha256); no longer waited for".
    private static func message(_ overdue: LuaCallMonitor.Overdue, event: String?) -> String {
        let position = overdue.position.map { $0 + ": " } ?? ""
        let what = event.map { "a \($0) handler" } ?? "a script"
        let place = overdue.function.map { " (stuck in \($0))" } ?? " (stuck in Lua code or a library function)"
        return "\(position)\(what) did not return within its time budget of \(LuaRuntime.describe(seconds: overdue.budget)) s"
            + " and a grace of \(Int(grace)) s\(place); no longer waited for"
    }
}

/// A handler's reply to the engine: sent with its batch (`sendHeld`), or by the backstop
/// when it gave up on the handler (`abandon`). A class (the existential then holds a
/// reference and allocates nothing): a closure for each cost an allocation per event.
protocol HandlerReply: AnyObject, Sendable {
    func abandon(_ message: String)
    func sendHeld()
}

/// A reply the engine takes once: from the Lua thread, or from the backstop when it gave up
/// waiting (then the handler's late verdict is dropped). `abandoned` is the verdict the
/// backstop sends then; for the usual events it captures nothing, so it costs no allocation.
final class ReplyOnce<Verdict: Sendable>: HandlerReply {
    private let reply: @Sendable (Verdict) -> Void
    private let abandoned: @Sendable (String) -> Verdict
    private let sent = Atomic<Bool>(false)
    /// The verdict the Lua thread decided, sent with its batch's replies (`sendHeld`).
    /// Set and read on the Lua thread only, in one batch.
    nonisolated(unsafe) private var held: Verdict?

    init(_ reply: @escaping @Sendable (Verdict) -> Void, abandoned: @escaping @Sendable (String) -> Verdict) {
        self.reply = reply
        self.abandoned = abandoned
    }

    /// Whether the engine has its answer already (a late handler's report is then dropped too).
    var answered: Bool { sent.load(ordering: .acquiring) }

    func callAsFunction(_ verdict: Verdict) {
        if !sent.exchange(true, ordering: .acquiringAndReleasing) { reply(verdict) }
    }

    func abandon(_ message: String) { self(abandoned(message)) }

    /// Keeps `verdict` to send later, from its batch (a closure per reply cost an allocation).
    func hold(_ verdict: Verdict) { held = verdict }

    func sendHeld() {
        if let verdict = held { self(verdict) }
    }
}
