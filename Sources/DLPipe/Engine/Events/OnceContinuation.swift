import Synchronization

/// A continuation resumed by whichever answer comes first: the engine's, or
/// the one a cancelled waiter gives itself. Later answers change nothing; an
/// answer that comes before the continuation is set (a task cancelled before
/// it waited) is kept and given at once when it is.
final class OnceContinuation<Value: Sendable>: Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<Value, Never>)
        case answered(Value)
        case done
    }
    private let state = Mutex<State>(.empty)

    /// Sets the continuation to resume; resumes it at once if the answer came first.
    func wait(_ continuation: CheckedContinuation<Value, Never>) {
        let early = state.withLock { state -> Value? in
            guard case .answered(let value) = state else {
                state = .waiting(continuation)
                return nil
            }
            state = .done
            return value
        }
        if let early { continuation.resume(returning: early) }
    }

    /// Gives the answer unless one was given already.
    func resume(_ value: Value) {
        let waiting = state.withLock { state -> CheckedContinuation<Value, Never>? in
            switch state {
            case .empty:
                state = .answered(value)
                return nil
            case .waiting(let continuation):
                state = .done
                return continuation
            case .answered, .done:
                return nil
            }
        }
        waiting?.resume(returning: value)
    }
}
