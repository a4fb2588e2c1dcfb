import Foundation

/// Runs blocking work (a database call that waits out an outage, a loop of
/// thousands of round trips) on a thread of its own and awaits it, failing
/// with `TimedOut` after `seconds` instead of hanging. Swift Testing runs
/// every test on the cooperative pool, one thread per core: a test blocked
/// there for seconds holds one of the two threads of a two-core machine, and
/// every other test (an engine's events, a `within` deadline) waits with it.
/// Record no expectations inside `work` (it runs outside the test's task):
/// return what to check.
public func offThePool<T: Sendable>(
    seconds: Double, _ what: String = "the blocking work", _ work: @escaping @Sendable () throws -> T
) async throws -> T {
    let result: Result<T, any Error> = try await within(seconds: seconds, what) {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: Result { try work() }) }
        }
    }
    return try result.get()
}
