internal import CLua
import DLPipe
import Foundation

/// One thread per process that makes a Lua call stop soon after its deadline even while it
/// sits in slow instructions: the count hook reads the clock only every 1,000 instructions,
/// and 1,000 instructions that each copy 100 MB (or compare two large strings) take minutes.
/// A few times a second it reads each runtime's deadline from shared memory and, once it has
/// passed, sets the running thread's count hook to fire on the next instruction
/// (`dl_watchdog_poke`). A call costs the runtime nothing: no syscall, no thread hop.
final class LuaWatchdog: Sendable {
    /// The process's watchdog, started with the first runtime.
    static let shared = LuaWatchdog()

    /// How often the watchdog looks: a stop comes at most this late after the deadline.
    static let interval: Double = 0.05

    /// The control blocks of the live runtimes, by address, under `lock`. Held while poking,
    /// so a runtime that closes its state (after `unregister`) never has it touched.
    /// (NSLock, a pthread mutex, rather than Mutex: ThreadSanitizer sees the order a pthread
    /// mutex makes, not the futex inside Mutex, and reported the set's accesses as races.)
    private let lock = NSLock()
    nonisolated(unsafe) private var blocks = Set<UInt>()

    private init() {
        let thread = Thread { [self] in
            ThreadName.set("dlpipe-luawatch")
            loop()
        }
        thread.stackSize = 256 << 10
        thread.start()
    }

    /// Starts watching a runtime's control block.
    func register(_ ctl: UnsafeMutablePointer<dl_lua_ctl>) {
        lock.withLock { _ = blocks.insert(UInt(bitPattern: ctl)) }
    }

    /// Stops watching it; after this returns the watchdog no longer touches it.
    func unregister(_ ctl: UnsafeMutablePointer<dl_lua_ctl>) {
        lock.withLock { _ = blocks.remove(UInt(bitPattern: ctl)) }
    }

    private func loop() {
        while true {
            Thread.sleep(forTimeInterval: Self.interval)
            let now = dl_now_ns()
            lock.withLock {
                for address in blocks {
                    if let ctl = UnsafeMutablePointer<dl_lua_ctl>(bitPattern: address) { _ = dl_watchdog_poke(ctl, now) }
                }
            }
        }
    }
}
