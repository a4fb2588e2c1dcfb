import Foundation
import Synchronization

/// One thread that runs closures in order: the Lua state lives here and nowhere
/// else, and a slow handler blocks only this thread, never the engine's.
final class LuaThread: Sendable {
    private let queue = Mutex<[@Sendable () -> Void]>([])
    private let signal = DispatchSemaphore(value: 0)

    init(name: String = "dlpipe-lua") {
        let thread = Thread { [self] in loop() }
        thread.name = name
        // Deep Lua recursion runs on this stack (the C stack, for C calls).
        thread.stackSize = 16 << 20
        thread.start()
    }

    /// Runs `work` on the Lua thread after everything queued before it.
    func async(_ work: @escaping @Sendable () -> Void) {
        queue.withLock { $0.append(work) }
        signal.signal()
    }

    /// Runs `work` on the Lua thread and waits for its result.
    func sync<T: Sendable>(_ work: @escaping @Sendable () -> T) -> T {
        let done = DispatchSemaphore(value: 0)
        let box = Mutex<T?>(nil)
        async {
            let value = work()
            box.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return box.withLock { $0! }
    }

    private func loop() {
        while true {
            signal.wait()
            guard let work = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
            work()
        }
    }
}
