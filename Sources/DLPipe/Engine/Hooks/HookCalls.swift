/// The hook calls the engine loop waits for: how many are out, and their
/// deadlines. Engine thread only.
final class HookCalls {
    var pendingHookCalls = 0
    /// Hook calls waiting for a reply, by deadline (`hookDeadline`).
    var hookDeadlines = HookDeadlines()
}
