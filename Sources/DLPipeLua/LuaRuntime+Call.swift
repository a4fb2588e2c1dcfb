internal import CLua

extension LuaRuntime {
    /// Calls a Lua function with a wall-clock budget in seconds, charged to it and every
    /// coroutine it starts (an infinite budget means none). The memory cap is enforced while
    /// it runs. After a memory error the runtime runs a full collection, so it stays usable.
    public func call(_ function: LuaFunctionRef, _ arguments: [LuaValue], budget: Double) throws(LuaError) -> [LuaValue] {
        try call(function, budget: budget, argumentCount: arguments.count) { L in
            for argument in arguments { push(argument, on: L) }
        }
    }

    /// `call` with arguments that `pushArguments` puts on the stack itself (exactly
    /// `argumentCount` values): event arguments go straight to Lua tables, without
    /// `LuaValue` dictionaries to build, hash and free on every event.
    func call(
        _ function: LuaFunctionRef, budget: Double, argumentCount: Int, pushArguments: (OpaquePointer) -> Void
    ) throws(LuaError) -> [LuaValue] {
        guard function.pool === pool else {
            throw LuaError(kind: .runtime, message: "the function belongs to another Lua runtime")
        }
        let L = currentState
        releaseDeadRefs(L)
        let base = lua_gettop(L)
        defer { lua_settop(L, base) }
        guard argumentCount < 1_000_000, lua_checkstack(L, Int32(argumentCount) + 3) != 0 else {
            throw LuaError(kind: .runtime, message: "too many arguments for a Lua call")
        }
        dl_push_msgh(L)
        lua_rawgeti(L, dl_registryindex(), lua_Integer(function.ref))
        pushArguments(L)
        precondition(lua_gettop(L) == base + 2 + Int32(argumentCount), "pushArguments pushed the wrong count")

        let saved = ctl.pointee
        begin(budget: budget, on: L, functionIndex: base + 2)
        // A call from a Swift function runs Lua again: not "in Swift" for the monitor meanwhile.
        let outerSwift = callDepth == 0 ? nil : monitor.suspendSwift()
        callDepth += 1
        let status = dl_pcall_script(L, Int32(argumentCount), dl_multret(), base + 1)
        callDepth -= 1
        if let outerSwift { monitor.leaveSwift(outerSwift) } else { monitor.end() }
        ctl.pointee.enforce = saved.enforce
        let failure = self.failure(status: status, on: L, budget: budget, refusalsBefore: saved.refusals)
        // Back to the caller's budget and flags; a nested call's timeout must not stick to an
        // outer call whose own deadline has not passed (if it has, the hook sees it again).
        // (dl_ctl_restore, not an assignment: the watchdog thread reads the deadline meanwhile)
        var restored = saved
        restored.in_use = ctl.pointee.in_use
        restored.refusals = ctl.pointee.refusals
        dl_ctl_restore(ctl, &restored)
        // The watchdog must not keep a thread of this call (it may be collected now).
        dl_set_running(ctl, callDepth == 0 ? nil : L)
        if let failure {
            if failure.kind == .memory { dl_gc_collect(L) }
            throw failure
        }
        let count = lua_gettop(L) - base - 1
        guard count > 0 else { return [] }
        return (0..<count).map { value(at: base + 2 + $0, on: L) }
    }

    /// Sets the deadline and flags for a call and turns the cap on.
    private func begin(budget: Double, on L: OpaquePointer, functionIndex: Int32) {
        let now = dl_now_ns()
        var deadline: Int64 = 0
        if budget.isFinite && budget < 1e9 {
            deadline = now + Int64(max(budget, 0) * 1e9)
        }
        if callDepth > 0 {
            let outer = ctl.pointee.deadline_ns
            if outer != 0 { deadline = deadline == 0 ? outer : min(deadline, outer) }
        } else {
            monitor.begin(deadline: deadline, budget: budget)
            // A previous timeout left this thread's hook firing on every instruction, and a
            // previous script may have run collectgarbage("stop") on the shared state.
            dl_arm_hook(L)
            dl_gc_restart(L)
        }
        dl_begin_positions(L, functionIndex)
        dl_ctl_set_deadline(ctl, deadline) // atomic: the watchdog thread reads it
        ctl.pointee.timed_out = 0
        ctl.pointee.enforce = 1
    }

    /// Turns the outcome of a protected call into a LuaError, or nil for success.
    private func failure(status: Int32, on L: OpaquePointer, budget: Double, refusalsBefore: UInt32) -> LuaError? {
        let traceback = takeTraceback(on: L)
        // The stop is sticky: even if the script caught the error and returned, it timed out.
        if ctl.pointee.timed_out != 0 {
            let position = Self.position(dl_ctl_stop_src(ctl), Int(ctl.pointee.stop_line))
            let place = String(cString: dl_ctl_stop_in(ctl))
            return LuaError(kind: .timeout, message: "\(position)time budget of \(Self.describe(seconds: budget)) s exceeded"
                + (place.isEmpty ? "" : " in \(place)"))
        }
        if status == LUA_OK { return nil }
        let message = string(at: -1, on: L) ?? "(error object is not a string)"
        let refused = ctl.pointee.refusals != refusalsBefore
        // A refused allocation surfaces as LUA_ERRMEM (lua_error also turns the "not enough
        // memory" string into it), which skips the message handler: the position is then the
        // hook's last sample. A script that re-raises the message in its own words goes
        // through the handler. Without a refusal, "not enough memory" is just a script error.
        if refused && (status == LUA_ERRMEM || message.hasSuffix("not enough memory")) {
            let position = status == LUA_ERRMEM || ctl.pointee.err_line < 0
                ? Self.position(dl_ctl_last_src(ctl), Int(ctl.pointee.last_line))
                : Self.position(dl_ctl_err_src(ctl), Int(ctl.pointee.err_line))
            return LuaError(kind: .memory, message: "\(position)memory limit of \(Self.describe(bytes: memoryLimit)) exceeded")
        }
        return LuaError(kind: .runtime, message: message, traceback: status == LUA_ERRRUN ? traceback : nil)
    }

    /// Reads and clears the traceback the message handler left in the registry.
    private func takeTraceback(on L: OpaquePointer) -> String? {
        guard lua_checkstack(L, 2) != 0 else { return nil }
        lua_getfield(L, dl_registryindex(), "dl.traceback")
        let traceback = string(at: -1, on: L)
        dl_pop(L, 1)
        lua_pushnil(L)
        lua_setfield(L, dl_registryindex(), "dl.traceback")
        return traceback.flatMap(Self.scriptFrames)
    }

    /// A traceback with dlpipe's own frames left out (the prelude's dispatch
    /// and its calls into Swift: `dlpipe/prelude.lua:N: in ...`, the `[C]: in ?`
    /// that starts every call, and `error` itself, whose caller's line is the
    /// next frame), so that it shows the script's lines only; nil when no
    /// frame of a script is left (only C frames and elided tail calls: the
    /// message names the line already).
    static func scriptFrames(_ traceback: String) -> String? {
        let lines = traceback.split(separator: "\n", omittingEmptySubsequences: false)
        let frame = { (line: Substring) in line.drop { $0 == "\t" || $0 == " " } }
        let kept = lines.filter { line in
            let frame = frame(line)
            return !frame.hasPrefix("dlpipe/") && !frame.hasPrefix("[C]: in ?") && !frame.hasPrefix("[C]: in function 'error'")
        }
        let scripts = kept.filter { line in
            let frame = frame(line)
            return !frame.hasPrefix("stack traceback:") && !frame.hasPrefix("[C]") && !frame.hasPrefix("(...tail calls...)")
        }
        guard !scripts.isEmpty || kept.first.map({ !$0.hasPrefix("stack traceback:") }) == true else { return nil }
        return kept.joined(separator: "\n")
    }

    /// "src:line: " from a recorded position; just "src: " without a line, "" without a source.
    static func position(_ src: UnsafePointer<CChar>, _ line: Int) -> String {
        let source = String(cString: src)
        if source.isEmpty { return "" }
        return line > 0 ? "\(source):\(line): " : "\(source): "
    }
}
