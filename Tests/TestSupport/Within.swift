import Synchronization

/// A wait that took longer than it may: the call it guarded hangs.
public struct TimedOut: Error, CustomStringConvertible {
    public let what: String
    public let seconds: Double
    public var description: String { "\(what) did not answer within \(seconds) s" }
}

/// Runs `operation` and returns its result, or throws `TimedOut` after
/// `seconds`: a call that hangs fails its test instead of hanging the suite.
///
/// The operation runs in a task of its own, not a child of a task group: a
/// group waits for every child at its end, so a child that hangs would hang
/// the group too. A timed-out operation is cancelled and left behind.
public func within<T: Sendable>(
    seconds: Double, _ what: String = "the call", _ operation: @escaping @Sendable () async -> T
) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let gate = Gate(continuation)
        let work = Task {
            let value = await operation()
            gate.take()?.resume(returning: value)
        }
        Task {
            try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
            if let late = gate.take() {
                work.cancel()
                late.resume(throwing: TimedOut(what: what, seconds: seconds))
            }
        }
    }
}

/// The continuation of `within`, resumed by whichever comes first.
private final class Gate<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, any Error>?>
    init(_ continuation: CheckedContinuation<T, any Error>) { self.continuation = Mutex(continuation) }
    func take() -> CheckedContinuation<T, any Error>? { continuation.withLock { $0.take() } }
}
