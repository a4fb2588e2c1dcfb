import DLPipe

/// What the engine tells the worker on its own thread (quick, no database):
/// ends, transfers that gave their slot back, hosts held, retries handed back.
extension QueueWorker {
    /// A download's terminal event (on the engine thread: quick, no database).
    func noteEnd(_ event: DownloadEvent) {
        guard event.isTerminal, let info = event.download else { return }
        let id = Int64(info.id.rawValue)
        var outcome: ClaimOutcome
        var error: String?
        var unchanged = false
        var bytes: Int64 = 0
        // A server's Retry-After holds its host back for every worker, also
        // when its download fails for good (no retry left): the others sent
        // 30 requests in the 3 s the server asked for.
        var holdHost: Double = 0
        switch event {
        case .finished(_, let result):
            outcome = .finished
            unchanged = result.unchanged
            bytes = result.unchanged ? 0 : result.bytes
        case .failed(_, let failure):
            outcome = .failed
            error = failure.description
            holdHost = failure.retryAfter ?? 0
        case .handled(_, let failure):
            outcome = .handled
            error = failure.description
            holdHost = failure.retryAfter ?? 0
        case .skipped(_, let reason): outcome = .skipped; error = reason
        case .cancelled: outcome = .cancelled
        default:
            // Stopped: the claim stays this worker's until `leave` puts it back.
            return
        }
        let known = state.withLock { state -> Bool in
            guard let token = state.letGo(id)?.token else { return false }
            state.ends.append(ClaimEnd(
                id: id, token: token, outcome: outcome, error: error, unchanged: unchanged, bytes: bytes, holdHost: holdHost))
            return true
        }
        if known { signal() }
    }

    /// A claimed download's transfer ended (on the engine thread: quick, no
    /// database): its host slot goes back in the next cycle, while its file
    /// waits for its batch, and the worker may claim another in its place.
    func noteTransferEnded(_ number: Int) {
        let id = Int64(number)
        // From ahead into the engine in one step for a cancel (`admission`).
        let known = admission.withLock { _ -> Bool in
            let (known, next) = state.withLock { state -> (Bool, ClaimedRequest?) in
                state.handOver(from: id, at: QueueClock.now())
            }
            if let next, let engine = engineBox.withLock({ $0 }) {
                // Its host's slot, handed over: the engine starts it now. Its
                // host stays as the engine paces it (a Retry-After this engine
                // holds is not lifted: no claim of the queue's brought it).
                engine.addClaimed([next], liftingHolds: false)
            }
            return known
        }
        if known { signal() }
    }

    /// A Retry-After this worker's engine got (on the engine thread, at the
    /// answer): its host is held here at once, as the engine holds it,
    /// until the report of download `number` carries the hold to the queue.
    /// No claim held ahead takes its slots over meanwhile (`handOver`), and
    /// no claim lifts the engine's hold (`unreportedHolds`).
    func noteOwnHold(_ number: Int, host: String, seconds: Double) {
        let now = QueueClock.now()
        state.withLock { state in
            state.heldUntil[host] = max(state.heldUntil[host] ?? 0, now + seconds)
            state.unreportedHolds[Int64(number)] = (host, now + seconds)
        }
    }

    /// A failed attempt whose retry the queue schedules (on the engine thread:
    /// quick, no database): reported as ready again after `delay`.
    func noteRetry(_ number: Int, after delay: Double, _ error: DownloadError?, request: DownloadRequest, attempts: Int) {
        let id = Int64(number)
        let known = state.withLock { state -> Bool in
            guard let token = state.letGo(id)?.token else { return false }
            state.ends.append(ClaimEnd(
                id: id, token: token, outcome: .retry(after: delay), error: error?.description, unchanged: false, bytes: 0,
                // The server asked to be left alone: not by this worker only.
                holdHost: error?.retryAfter.map { min($0, delay) } ?? 0, handedBack: (request, attempts)))
            return true
        }
        if known { signal() }
    }
}
