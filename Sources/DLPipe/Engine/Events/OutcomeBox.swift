import Synchronization

/// A download's outcome for its `DownloadTask`s: resolved once, by the hub,
/// right after the terminal event went into the tasks' event streams (or with
/// `stopped` when the engine stops first); awaited by any number of callers.
final class OutcomeBox: Sendable {
    private struct State {
        var outcome: DownloadOutcome?
        var waiters: [CheckedContinuation<DownloadOutcome, Never>] = []
    }
    private let state = Mutex<State>(State())

    /// Sets the outcome once (later calls change nothing) and wakes the waiters.
    func resolve(_ outcome: DownloadOutcome) {
        let waiters = state.withLock { state -> [CheckedContinuation<DownloadOutcome, Never>] in
            guard state.outcome == nil else { return [] }
            state.outcome = outcome
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }

    /// The outcome, once there is one.
    func value() async -> DownloadOutcome {
        if let outcome = state.withLock({ $0.outcome }) { return outcome }
        return await withCheckedContinuation { continuation in
            let outcome = state.withLock { state -> DownloadOutcome? in
                if state.outcome == nil { state.waiters.append(continuation) }
                return state.outcome
            }
            if let outcome { continuation.resume(returning: outcome) }
        }
    }
}

extension DownloadEvent {
    /// The outcome a terminal event reports (nil for the others).
    var outcome: DownloadOutcome? {
        switch self {
        case .finished(_, let result): return .finished(result)
        case .failed(_, let error): return .failed(error)
        case .handled(_, let error): return .handled(error)
        case .skipped(_, let reason): return .skipped(reason)
        case .cancelled: return .cancelled
        case .stopped: return .stopped
        case .queued, .response, .progress, .retrying, .paused, .drained: return nil
        }
    }
}
