/// The words of `JobState`: its phases, the inputs it takes and the actions it returns.
extension JobState {
    /// The phases that transfer (requesting .. receiving) carry the attempt
    /// under way: `start` makes a new one at the request's URL and method, a
    /// move out of them ends it, and no other phase holds one.
    enum Phase {
        /// Waiting for a transfer slot.
        case queued
        /// Backing off before the next attempt.
        case waitingRetry
        /// Transfer running (or about to start); the final response has not arrived.
        case requesting(Attempt)
        /// The `response` hook is deciding; the transfer is paused.
        case awaitingVerdict(Attempt)
        /// The `response` hook is deciding and the transfer has already ended:
        /// its body (if any) waits in memory for the verdict.
        case holdingBody(Attempt)
        /// Body bytes stream to the part file.
        case receiving(Attempt)
        /// The body is whole and checked, its part file closed: it waits for
        /// its batch's syncfs before it gets its name. The slot is free.
        case awaitingDurability
        /// The body, whole in memory, is on the syncfs queue to be written and
        /// linked under its name (`HeldFile`); a stop first takes it back.
        case placingHeldBody
        /// The held body is linked under its name: a stop comes too late, and
        /// the download finishes when its batch is settled.
        case linked
        /// Body complete: the file is renamed into place and the `finished` hook runs.
        case finalizing
        /// The `retrying` hook is deciding about a retry the policy grants.
        case awaitingRetryVerdict
        /// The `failed` hook is deciding about a failure no retry follows.
        case awaitingFailureVerdict
        /// Stopped by the caller; the part file stays for a later resume.
        case paused
        /// Terminal; `handled` is a failure that a `failed` hook dealt with.
        case finished, skipped, failed, handled, cancelled

        /// The phase without what it carries: what code that only asks
        /// "which phase?" compares.
        enum Kind: CaseIterable {
            case queued, waitingRetry, requesting, awaitingVerdict, holdingBody, receiving
            case awaitingDurability, placingHeldBody, linked, finalizing
            case awaitingRetryVerdict, awaitingFailureVerdict, paused
            case finished, skipped, failed, handled, cancelled
        }

        var kind: Kind {
            switch self {
            case .queued: .queued
            case .waitingRetry: .waitingRetry
            case .requesting: .requesting
            case .awaitingVerdict: .awaitingVerdict
            case .holdingBody: .holdingBody
            case .receiving: .receiving
            case .awaitingDurability: .awaitingDurability
            case .placingHeldBody: .placingHeldBody
            case .linked: .linked
            case .finalizing: .finalizing
            case .awaitingRetryVerdict: .awaitingRetryVerdict
            case .awaitingFailureVerdict: .awaitingFailureVerdict
            case .paused: .paused
            case .finished: .finished
            case .skipped: .skipped
            case .failed: .failed
            case .handled: .handled
            case .cancelled: .cancelled
            }
        }
    }
    enum Input: Equatable {
        /// The scheduler gave this download a transfer slot.
        case start
        /// The final response arrived; `askHook` when a response hook wants it.
        case responseArrived(askHook: Bool)
        /// The transfer ended while the response hook decides.
        case transferEndedDuringVerdict
        case responseVerdict(ResponseVerdict)
        /// Between two hops of a redirect, the next hop may not be asked
        /// (robots.txt disallows it): the download ends skipped, unrequested.
        case hopRefused(reason: String)
        /// The body is whole and checked; it waits for its batch's syncfs as a
        /// part file, or (`held`) as a body in memory.
        case bodyChecked(held: Bool)
        /// The answer to `withdrawHeldBody`: taken back before its link (the
        /// stop that asked for it now applies), or linked already.
        case heldBodyWithdrawn, heldBodyLinked
        /// The body arrived whole and the file is in place.
        case transferSucceeded(askHook: Bool)
        case finishedVerdict(FinishedVerdict)
        /// The file is whole from an earlier run and is kept without a request
        /// (refresh "never"); `askHook` when a finished hook wants it.
        case alreadyFinished(askHook: Bool)
        /// The attempt failed. `policyDelay` is the backoff the retry policy grants
        /// (nil: no retry); `askRetrying` / `askFailed` when those hooks want to decide.
        case transferFailed(DownloadError, policyDelay: Double?, askRetrying: Bool, askFailed: Bool)
        case retryVerdict(RetryVerdict)
        case failureVerdict(FailureVerdict)
        case retryDue
        case pause, resume, cancel
        /// End as failed now, whatever the phase (a hook broke): no retry.
        case fail(DownloadError)
    }

    enum Action: Equatable {
        case startTransfer
        /// Let a paused-for-verdict transfer go on (with the hook's name, if any).
        case continueTransfer
        /// The transfer ended while the hook decided: its body goes to disk and
        /// the download completes.
        case completeTransfer
        /// Take a held body back from the syncfs queue before its link; the
        /// engine answers `heldBodyWithdrawn` or `heldBodyLinked`.
        case withdrawHeldBody
        /// Stop the transfer; `keepPart` keeps the part file for a resume.
        case abortTransfer(keepPart: Bool)
        case removePartFile
        case askResponseHook
        case askFinishedHook
        case askRetryingHook(delay: Double)
        case askFailedHook
        case scheduleRetry(after: Double)
        case enqueue
        case dequeue
        /// The transfer slot is free again.
        case releaseSlot
        case emitRetrying(DownloadError, delay: Double)
        case emitFinished
        case emitFailed(DownloadError)
        case emitHandled(DownloadError)
        case emitSkipped(String)
        case emitCancelled
        case emitPaused
    }

    /// What one input does in the current phase.
    enum Step: Equatable {
        /// A transition (or a stay) with the actions the engine performs.
        case moved([Action])
        /// An input that may come late or twice (a stale queue entry or timer,
        /// a hook's reply after a pause, a stop after the end): nothing changes.
        case late
        /// An input the engine never sends in this phase: a bug in the engine.
        /// Nothing changes; `handle` reports it (`ImpossibleTransitions`).
        case impossible
    }
}

extension JobState.Step {
    /// The actions of a move; none otherwise.
    var actions: [JobState.Action] {
        if case .moved(let actions) = self { return actions }
        return []
    }
}
