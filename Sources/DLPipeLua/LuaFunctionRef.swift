import Synchronization

/// A Lua function held in the registry of one runtime, so Swift can call it later.
/// Equality is identity: converting the same Lua function twice gives two unequal refs.
public final class LuaFunctionRef: Hashable, Sendable {
    /// The registry slot (luaL_ref result).
    let ref: Int32
    /// The runtime's release queue; also identifies which runtime the ref belongs to.
    let pool: LuaRefPool

    /// Wraps a registry slot that `pool`'s runtime owns.
    init(ref: Int32, pool: LuaRefPool) {
        self.ref = ref
        self.pool = pool
    }

    /// Queues the slot for release; the runtime frees it on its own thread later,
    /// because deinit may run on any thread and Lua is not thread-safe.
    deinit { pool.release(ref) }

    /// Identity comparison.
    public static func == (lhs: LuaFunctionRef, rhs: LuaFunctionRef) -> Bool { lhs === rhs }

    /// Hashes the identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// Registry slots whose refs died, waiting for the owning thread to luaL_unref them.
final class LuaRefPool: Sendable {
    /// Pending slots, and whether the runtime is gone (then nothing needs freeing).
    private let state = Mutex<(closed: Bool, pending: [Int32])>((false, []))

    /// Called from any thread by a dying ref.
    func release(_ ref: Int32) {
        state.withLock { if !$0.closed { $0.pending.append(ref) } }
    }

    /// Takes the pending slots (owner thread only).
    func drain() -> [Int32] {
        state.withLock { s in
            let refs = s.pending
            s.pending = []
            return refs
        }
    }

    /// Marks the runtime closed: the state and its registry are gone.
    func close() {
        state.withLock { $0 = (true, []) }
    }
}
