internal import CLua

/// One Lua 5.4 state with the dlpipe sandbox, a memory cap and per-call time budgets.
/// Not Sendable: create, use and drop it on one thread. A call can take seconds, so that
/// thread should be a dedicated one, not the Swift concurrency pool.
///
/// The sandbox (SPEC 5): the base library without `dofile`/`loadfile`; `load` forced to text
/// mode, giving a chunk its caller's environment unless one is passed; `setmetatable`
/// refusing `__gc` (finalizers run with hooks off); `xpcall` and `coroutine.create`/`wrap`
/// wrapped so no script code runs with hooks off after a timeout; `string` without `dump`
/// and with a fast, capped `rep`; `table`, `math`, `utf8`, `coroutine`, `collectgarbage`;
/// `os` with only `time`, `clock`, `date`, `getenv`. No `io`, `package`/`require`, `debug`.
/// `unsafe: true` opens the full standard library untouched; per-script environments, the
/// cap and the budget still apply (though `debug.sethook` can defeat the budget).
/// Long C calls are bounded too: `string.find`/`match`/`gmatch`/`gsub` (a copy of Lua's
/// matcher that checks the deadline), `table.move` and `table.sort` (deadline checks),
/// `load` (at most 1 MiB of source), `coroutine.resume`/`close`/`wrap` (a bound on the C
/// stack: Lua 5.4.4 crashes on nested closes), and a watchdog thread makes the hook fire on
/// the next instruction once the deadline passed (`LuaWatchdog`).
public final class LuaRuntime {
    /// The main thread of the state.
    let mainState: OpaquePointer
    /// The control block shared with the C allocator, hook and trampoline.
    let ctl: UnsafeMutablePointer<dl_lua_ctl>
    /// What the watchdog thread reads and writes (`LuaWatchdog`).
    private let watch: UnsafeMutablePointer<dl_watch>
    /// Where dead function refs wait to be unreferenced on this thread.
    let pool = LuaRefPool()
    /// Swift functions exposed to Lua; the index is upvalue 2 of their trampoline closure.
    var functions: [([LuaValue]) throws(LuaCallError) -> [LuaValue]] = []
    /// Their names as scripts know them ("__dl.read" is "dl.read"), for the backstop's message.
    var functionNames: [String] = []
    /// Bytes of Swift memory each byte of their arguments takes while they run (`register`).
    var functionCosts: [Int] = []
    /// What the Lua thread is doing, for other threads (the handler backstop).
    let monitor = LuaCallMonitor()
    /// Threads running Swift callbacks, innermost last. Re-entrant API use must go through
    /// the running thread: a thread that resumed a coroutine may not be called into.
    var activeThreads: [OpaquePointer] = []
    /// Nesting of `call`: a call made from a callback keeps the outer deadline.
    var callDepth = 0
    /// The memory cap in bytes.
    public let memoryLimit: Int
    /// Whether the full standard library is open (no sandbox).
    public let isUnsafe: Bool

    /// Creates a state with the sandbox libraries, or the full standard library when `unsafe`.
    public init(memoryLimit: Int = 256 << 20, unsafe: Bool = false) {
        self.memoryLimit = max(memoryLimit, 0)
        self.isUnsafe = unsafe
        ctl = .allocate(capacity: 1)
        ctl.initialize(to: dl_lua_ctl())
        ctl.pointee.limit = self.memoryLimit
        watch = .allocate(capacity: 1)
        watch.initialize(to: dl_watch())
        ctl.pointee.watch = watch
        Self.useByteWiseCollation
        guard let state = dl_newstate(ctl) else { fatalError("Lua: cannot create a state (out of memory)") }
        mainState = state
        ctl.pointee.owner = Unmanaged.passUnretained(self).toOpaque()
        // Opening runs with the cap off, so a small cap cannot stop the runtime from starting.
        let status = dl_open_libs(state, unsafe ? 1 : 0)
        precondition(status == LUA_OK, "Lua: cannot open the standard libraries")
        lua_settop(state, 0)
        LuaWatchdog.shared.register(ctl)
    }

    /// `<` on two strings is `strcoll` in Lua, once per NUL byte; in the C locale that is a
    /// byte-wise compare, the fastest there is (and the same order on every machine). Set
    /// once per process; dlpipe never asks for another collation.
    private static let useByteWiseCollation: Void = {
        dl_use_byte_collation()
    }()

    /// Closes the state (pending refs are forgotten, not freed one by one).
    deinit {
        LuaWatchdog.shared.unregister(ctl)
        ctl.pointee.enforce = 0
        ctl.pointee.deadline_ns = 0
        lua_close(mainState)
        pool.close()
        ctl.deallocate()
        watch.deallocate()
    }

    /// The thread API calls must use: the one running a Swift callback, else the main thread.
    var currentState: OpaquePointer { activeThreads.last ?? mainState }

    /// Bytes the state holds now.
    public var memoryInUse: Int { Int(ctl.pointee.in_use) }

    /// Blocks the state has allocated so far (each table, string, closure...).
    var blocksMade: Int { Int(ctl.pointee.blocks_made) }

    /// Runs a full garbage collection (the cap is off: Swift asked for it).
    public func collectGarbage() {
        dl_gc_collect(currentState)
    }

    /// Loads a text chunk (binary chunks are refused) with its own environment, a world of its
    /// own (`dl_push_new_env`): the shared globals as they are now, each table among them a
    /// copy of its own (`string.upper = f` changes this script's `string` only), `dl` frozen
    /// (reads work, writes raise), and `_G` the environment itself. `setGlobal` and `register`
    /// after the load are not seen by it. A chunk name without "@" or "=" gets "@", so
    /// messages read "name:line:".
    public func load(_ source: [UInt8], chunkName: String) throws(LuaError) -> LuaFunctionRef {
        try load(source, chunkName: chunkName, sharedEnvironment: false)
    }

    /// `load`, optionally keeping the shared globals as the chunk's environment (for preludes).
    func load(_ source: [UInt8], chunkName: String, sharedEnvironment: Bool) throws(LuaError) -> LuaFunctionRef {
        let L = currentState
        releaseDeadRefs(L)
        let name = chunkName.hasPrefix("@") || chunkName.hasPrefix("=") ? chunkName : "@" + chunkName
        let display = String(name.dropFirst())
        let top = lua_gettop(L)
        defer { lua_settop(L, top) }
        guard lua_checkstack(L, 4) != 0 else {
            throw LuaError(kind: .runtime, message: "\(display): Lua stack exhausted")
        }
        // The compiler's allocations count against the cap; loading is protected, so a
        // refusal comes back as LUA_ERRMEM instead of a longjmp.
        let savedEnforce = ctl.pointee.enforce
        ctl.pointee.enforce = 1
        let status = source.withUnsafeBytes { buf in
            dl_load_text(L, buf.baseAddress?.assumingMemoryBound(to: CChar.self), buf.count, name)
        }
        ctl.pointee.enforce = savedEnforce
        guard status == LUA_OK else {
            if status == LUA_ERRMEM {
                throw LuaError(kind: .memory, message: "\(display): memory limit of \(Self.describe(bytes: memoryLimit)) exceeded while loading")
            }
            var message = string(at: -1, on: L) ?? "cannot load the chunk"
            // Lua's mode check ("attempt to load a binary chunk") carries no position.
            if message.hasPrefix("attempt to load") { message = "\(display): \(message)" }
            throw LuaError(kind: .syntax, message: message)
        }
        if !sharedEnvironment { dl_set_new_env(L) }
        return LuaFunctionRef(ref: luaL_ref(L, dl_registryindex()), pool: pool)
    }

    /// Loads and calls a trusted chunk (a prelude written in Lua) with a 5 s budget. By default
    /// it runs in the shared globals, as plain Lua would: its globals, `_G.x = ...` and
    /// `x = nil` act on what every script sees. Pass `sharedEnvironment: false` for a private one.
    @discardableResult
    public func run(_ source: String, chunkName: String, sharedEnvironment: Bool = true) throws(LuaError) -> [LuaValue] {
        let function = try load(Array(source.utf8), chunkName: chunkName, sharedEnvironment: sharedEnvironment)
        return try call(function, [], budget: 5)
    }

    /// Exposes a Swift function as the global at `path` ("f" or "dl.url.parse": intermediate
    /// tables are created, non-tables in the way replaced). Throwing `LuaCallError` raises a
    /// Lua error with its message. An empty path segment makes this do nothing. The runtime
    /// keeps the closure until it dies: capture the runtime (or its owner) `unowned`/`weak`.
    /// The closure may call back into the runtime (`call`, `getGlobal`, ...).
    ///
    /// `cost` is how many bytes of Swift memory the call takes, at most, per byte of its
    /// arguments (their copy as `LuaValue`s is 1; each String, copy or parse of them adds
    /// one): a call whose arguments would take more than the memory cap leaves is refused
    /// before they are copied, so that what Swift holds for a script counts against the cap.
    /// `name` is the call as scripts know it, for messages (default: `path` without "__").
    public func register(
        _ path: String, name: String? = nil, cost: Int = 2,
        _ function: @escaping ([LuaValue]) throws(LuaCallError) -> [LuaValue]
    ) {
        let L = currentState
        functions.append(function)
        functionCosts.append(cost)
        functionNames.append(name ?? (path.hasPrefix("__") ? String(path.dropFirst(2)) : path))
        let id = lua_Integer(functions.count - 1)
        setPath(path, on: L) {
            dl_push_swift_function(L, { L in luaDispatch(L) }, id)
        }
    }

    /// Sets the shared global at `path` (same path rules as `register`); all scripts see it.
    public func setGlobal(_ path: String, _ value: LuaValue) {
        let L = currentState
        setPath(path, on: L) { self.push(value, on: L) }
    }

    /// Reads the shared global at `path`; `.nil_` when absent or when a step is not a table.
    /// Functions come back as refs; metamethods are not invoked.
    public func getGlobal(_ path: String) -> LuaValue {
        let L = currentState
        let parts = Self.split(path)
        guard !parts.isEmpty, lua_checkstack(L, 3) != 0 else { return .nil_ }
        let top = lua_gettop(L)
        defer { lua_settop(L, top) }
        dl_pushglobaltable(L)
        for part in parts {
            guard lua_type(L, -1) == LUA_TTABLE else { return .nil_ }
            Self.pushString(part, on: L)
            lua_rawget(L, -2)
            dl_remove(L, -2)
        }
        return value(at: -1, on: L)
    }

    /// Sets `path` ("os.getenv") in the environment of a chunk `load` returned (its own world,
    /// not the shared globals); tables along the path must exist. Does nothing otherwise.
    func setInEnvironment(of chunk: LuaFunctionRef, _ path: String, _ value: LuaValue) {
        let L = currentState
        let parts = Self.split(path)
        guard chunk.pool === pool, let last = parts.last, lua_checkstack(L, 5) != 0 else { return }
        let top = lua_gettop(L)
        defer { lua_settop(L, top) }
        lua_rawgeti(L, dl_registryindex(), lua_Integer(chunk.ref))
        guard lua_getupvalue(L, -1, 1) != nil, lua_type(L, -1) == LUA_TTABLE else { return }
        for part in parts.dropLast() {
            Self.pushString(part, on: L)
            guard lua_rawget(L, -2) == LUA_TTABLE else { return }
        }
        Self.pushString(last, on: L)
        push(value, on: L)
        lua_rawset(L, -3)
    }

    /// Walks/creates tables along `path` in the shared globals and stores what `pushValue` pushes.
    func setPath(_ path: String, on L: OpaquePointer, _ pushValue: () -> Void) {
        let parts = Self.split(path)
        guard let last = parts.last, lua_checkstack(L, 5) != 0 else { return }
        let top = lua_gettop(L)
        defer { lua_settop(L, top) }
        releaseDeadRefs(L)
        dl_pushglobaltable(L)
        for part in parts.dropLast() {
            Self.pushString(part, on: L)
            if lua_rawget(L, -2) != LUA_TTABLE {
                dl_pop(L, 1)
                dl_newtable(L)
                Self.pushString(part, on: L)
                lua_pushvalue(L, -2)
                lua_rawset(L, -4)
            }
            dl_remove(L, -2)
        }
        Self.pushString(last, on: L)
        pushValue()
        lua_rawset(L, -3)
    }

    /// Splits "a.b.c"; empty when any segment is empty.
    private static func split(_ path: String) -> [String] {
        let parts = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        return parts.contains(where: \.isEmpty) ? [] : parts
    }

    /// Unreferences registry slots of refs that died since the last API call.
    func releaseDeadRefs(_ L: OpaquePointer) {
        for ref in pool.drain() { luaL_unref(L, dl_registryindex(), ref) }
    }

    /// "256 MiB", "512 KiB" or "1000 bytes".
    static func describe(bytes: Int) -> String {
        if bytes > 0 && bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes > 0 && bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }

    /// "2" for whole seconds, "0.2" otherwise.
    static func describe(seconds: Double) -> String {
        if seconds.isFinite, seconds == seconds.rounded(), abs(seconds) < 1e15 { return String(Int64(seconds)) }
        return String(seconds)
    }
}

/// The Swift side of `dl_trampoline`: finds the runtime through the state's control block.
/// Returns the result count, or -1 after pushing an error message; it never raises.
func luaDispatch(_ L: OpaquePointer?) -> Int32 {
    guard let L, let owner = dl_ctl(L)?.pointee.owner else { return 0 }
    return Unmanaged<LuaRuntime>.fromOpaque(owner).takeUnretainedValue().dispatch(L)
}
