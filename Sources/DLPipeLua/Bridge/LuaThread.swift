import Foundation
import DLPipe
import Synchronization

/// One thread that runs closures in order: the Lua state lives here and nowhere
/// else, and a slow handler blocks only this thread, never the engine's.
final class LuaThread: Sendable {
    private let queue = Mutex<[@Sendable () -> Void]>([])
    private let signal = DispatchSemaphore(value: 0)

    init(name: String = "dlpipe-lua") {
        let thread = Thread { [self] in
            ThreadName.set(name)
            loop()
        }
        // Deep Lua recursion runs on this stack (the C stack, for C calls).
        thread.stackSize = 16 << 20
        thread.start()
    }

    /// Runs `work` on the Lua thread after everything queued before it.
    ///
    /// Only work that finds the queue empty signals: the thread takes the whole
    /// queue per wake-up, so a burst of events costs one wake-up, not one each.
    func async(_ work: @escaping @Sendable () -> Void) {
        let wasEmpty = queue.withLock { queue in
            queue.append(work)
            return queue.count == 1
        }
        if wasEmpty { signal.signal() }
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
            let batch = queue.takeAll()
            for work in batch { work() }
        }
    }
}
