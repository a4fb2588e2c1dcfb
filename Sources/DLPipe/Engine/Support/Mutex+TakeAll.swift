import Synchronization

extension Mutex {
    /// Takes everything queued in a locked array at once, leaving an empty one.
    /// Swapped for `[]` on purpose: `removeAll(keepingCapacity:)` would keep a
    /// buffer as large as the biggest burst, allocated again on every turn.
    /// Used by the engine's inbox, the Lua thread's queue and the Lua hooks.
    package func takeAll<Element>() -> [Element] where Value == [Element] {
        withLock { queue in
            let taken = queue
            queue = []
            return taken
        }
    }
}
