import Foundation
import Synchronization

/// Blocking work (a database call that waits out an outage, a loop of
/// thousands of round trips) on a thread of its own, started at once, its
/// result awaited later. Swift Testing runs every test on the cooperative
/// pool, one thread per core: a test blocked there for seconds holds one of
/// the two threads of a two-core machine, and every other test (an engine's
/// events, a `within` deadline) waits with it. The thread starts in `init`,
/// not when a task first runs: a busy pool delays the wait, never the work.
/// Record no expectations inside `work` (it runs outside the test's task):
/// return what to check.
public final class BlockingWork<T: Sendable>: Sendable {
    private let state = Mutex<(result: Result<T, any Error>?, waiter: CheckedContinuation<Result<T, any Error>, Never>?)>((nil, nil))

    public init(_ work: @escaping @Sendable () throws -> T) {
        Thread.detachNewThread { [self] in
            let result = Result { try work() }
            let waiter = state.withLock { state in
                state.result = result
                return state.waiter.take()
            }
            waiter?.resume(returning: result)
        }
    }

    /// The work's result, or `TimedOut` when it takes longer than `seconds`.
    public func value(seconds: Double, _ what: String = "the blocking work") async throws -> T {
        let result = try await within(seconds: seconds, what) {
            await withCheckedContinuation { continuation in
                let done = self.state.withLock { state in
                    if state.result == nil { state.waiter = continuation }
                    return state.result
                }
                if let done { continuation.resume(returning: done) }
            }
        }
        return try result.get()
    }
}

/// `BlockingWork(work).value(seconds:)`: blocking work on its own thread, awaited.
public func offThePool<T: Sendable>(
    seconds: Double, _ what: String = "the blocking work", _ work: @escaping @Sendable () throws -> T
) async throws -> T {
    try await BlockingWork(work).value(seconds: seconds, what)
}
