/// What one event's handlers decided, after all of them ran.
struct DispatchOutcome {
    /// "skip", "retry", "giveup", "handled", "exit" or nil (no verdict).
    var verdict: String?
    var extra: LuaValue = .nil_
    /// The name and directory after the handlers, when a handler assigned them.
    var name: String?
    var directory: String?
    var renamed = false
    /// `request` events: `q.headers` after the handlers (what `host.finish` gave back).
    var requestHeaders: LuaValue?
    /// A handler failed (error, time budget, memory): the download fails with kind `hook`.
    var error: ScriptError?

    /// Takes a handler's verdict and its extra value from what `host.run`
    /// returned; the first verdict of an event stands.
    mutating func take(verdict result: ArraySlice<LuaValue>) {
        guard self.verdict == nil, let verdict = result.first?.text else { return }
        self.verdict = verdict
        extra = result.dropFirst().first ?? .nil_
    }

    /// Takes the name and directory `host.finish` returned, when a handler set them.
    mutating func take(rename value: LuaValue?) {
        guard case .table(let renamed)? = value else { return }
        self.renamed = true
        name = renamed[LuaValue("name")]?.text
        directory = renamed[LuaValue("dir")]?.text
    }

    /// Takes `q.headers` as `host.finish` returned it after a `request` event.
    mutating func take(requestHeaders value: LuaValue?) {
        requestHeaders = value
    }
}
