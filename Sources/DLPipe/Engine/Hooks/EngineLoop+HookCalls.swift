import Foundation

/// Hook calls answered exactly once, within the hook deadline (`HookReplyGate`, `HookDeadlines`).
extension EngineLoop {
    /// The `reply` closure for one hook call, counted as pending until it is
    /// answered. The first answer is posted as `deliver` makes it; later ones
    /// are dropped and counted. With a deadline, the engine answers
    /// `expiry(error)` itself when the hook has not replied in time.
    func hookReply<Verdict: Sendable>(
        _ hook: String, expiry: (DownloadError) -> Command,
        deliver: @escaping @Sendable (Verdict) -> Command
    ) -> @Sendable (Verdict) -> Void {
        assertOnEngineThread()
        hookCalls.pendingHookCalls += 1
        let gate = HookReplyGate()
        if let deadline = configuration.hookDeadline {
            let error = DownloadError(
                .hook, "the \(hook) hook did not reply within \(Self.seconds(deadline)) (hookDeadline)")
            hookCalls.hookDeadlines.add(.init(due: EngineLoop.now() + deadline, gate: gate, expiry: expiry(error)))
        }
        // Called on the hook's thread (Lua's, a library caller's): it holds
        // the inbox, never `self`.
        let inbox = inbox
        return { verdict in
            if gate.claim() {
                inbox.post(deliver(verdict))
            } else {
                inbox.ignoredHookReplies.add(1, ordering: .relaxed)
            }
        }
    }

    /// Answers the hook calls whose deadline passed without a reply.
    func expireHookCalls() {
        let expired = hookCalls.hookDeadlines.expired(now: EngineLoop.now())
        for entry in expired { post(entry.expiry) }
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : String(format: "%g s", value)
    }
}
