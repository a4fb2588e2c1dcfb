import Foundation

/// Runs blocking work (reading a child's output, waiting for it to exit) on a
/// thread of its own and awaits it. Swift Testing runs every test on the
/// cooperative pool, one thread per core: two tests blocked in `read` or
/// `waitpid` there hold both threads of a two-core machine, and every other
/// test (an engine's events, a `within` deadline) waits with them, in loaded
/// full runs for minutes.
func offThePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: work()) }
    }
}
