/// The life of one download as a value type: `handle` takes an input and returns the
/// actions to perform. No I/O here, so every transition is unit-tested directly.
///
/// queued -> requesting -> awaitingVerdict -> receiving -> finalizing -> finished
///                     \-> receiving (no response hook)          \-> failed | skipped | cancelled
/// Any running phase can fail the attempt: then awaitingFailureVerdict (when a hook
/// wants to decide) or straight to waitingRetry / failed by the retry policy.
struct JobState: Equatable {
    enum Phase: Equatable {
        /// Waiting for a transfer slot.
        case queued
        /// Backing off before the next attempt.
        case waitingRetry
        /// Transfer running; the final response has not arrived.
        case requesting
        /// The `response` hook is deciding; the transfer is paused.
        case awaitingVerdict
        /// Body bytes stream to the part file.
        case receiving
        /// Body complete: the file is renamed into place and the `finished` hook runs.
        case finalizing
        /// The `failed` hook is deciding whether to retry.
        case awaitingFailureVerdict
        /// Stopped by the caller; the part file stays for a later resume.
        case paused
        case finished, skipped, failed, cancelled
    }

    enum Input: Equatable {
        /// The scheduler gave this download a transfer slot.
        case start
        /// The final response arrived; `askHook` when a response hook wants it.
        case responseArrived(askHook: Bool)
        case responseVerdict(ResponseVerdict)
        /// The body arrived whole and the file is in place.
        case transferSucceeded(askHook: Bool)
        case finishedVerdict(FinishedVerdict)
        /// The attempt failed. `policyDelay` is the backoff the retry policy grants
        /// (nil: no retry); `askHook` when a failed hook wants to decide.
        case transferFailed(DownloadError, policyDelay: Double?, askHook: Bool)
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
        /// Stop the transfer; `keepPart` keeps the part file for a resume.
        case abortTransfer(keepPart: Bool)
        case removePartFile
        case askResponseHook
        case askFinishedHook
        case askFailedHook(retrying: Bool)
        case scheduleRetry(after: Double)
        case enqueue
        case dequeue
        /// The transfer slot is free again.
        case releaseSlot
        case emitRetrying(DownloadError, delay: Double)
        case emitFinished
        case emitFailed(DownloadError)
        case emitSkipped(String)
        case emitCancelled
        case emitPaused
    }

    private(set) var phase: Phase = .queued
    /// Attempts started so far.
    private(set) var attempt = 0
    /// Retries granted by hooks past the policy's budget.
    private(set) var hookRetries = 0
    /// The failure waiting for the `failed` hook's verdict.
    private var pendingFailure: (error: DownloadError, policyDelay: Double?)?
    /// The failure the `failed` hook is deciding about.
    var pendingError: DownloadError? { pendingFailure?.error }
    /// Retries a hook may force past the budget: a bound on `dl.retry` loops.
    static let hookRetryCap = 20

    var isTerminal: Bool {
        [.finished, .skipped, .failed, .cancelled].contains(phase)
    }

    /// Whether a transfer slot is held.
    var holdsSlot: Bool {
        [.requesting, .awaitingVerdict, .receiving].contains(phase)
    }

    static func == (a: JobState, b: JobState) -> Bool {
        a.phase == b.phase && a.attempt == b.attempt && a.hookRetries == b.hookRetries
    }

    /// Ends a download that never started (a rejected URL, a file the state
    /// knows as finished under refresh "never").
    mutating func endBeforeStart(_ terminal: Phase) {
        precondition(phase == .queued && [.failed, .skipped, .finished].contains(terminal))
        phase = terminal
    }

    /// Applies one input; inputs that do not fit the phase change nothing.
    mutating func handle(_ input: Input) -> [Action] {
        switch (phase, input) {
        case (.queued, .start):
            phase = .requesting
            attempt += 1
            return [.startTransfer]

        case (.requesting, .responseArrived(let askHook)):
            if askHook {
                phase = .awaitingVerdict
                return [.askResponseHook]
            }
            phase = .receiving
            return []

        case (.awaitingVerdict, .responseVerdict(let verdict)):
            switch verdict {
            case .proceed:
                // A rename was applied by the engine before this input.
                phase = .receiving
                return [.continueTransfer]
            case .skip(let reason):
                phase = .skipped
                return [.abortTransfer(keepPart: false), .removePartFile, .releaseSlot,
                        .emitSkipped(reason)]
            case .fail(let error):
                phase = .failed
                return [.abortTransfer(keepPart: false), .removePartFile, .releaseSlot,
                        .emitFailed(error)]
            }

        case (.requesting, .transferSucceeded(let askHook)),
            (.receiving, .transferSucceeded(let askHook)):
            if askHook {
                phase = .finalizing
                return [.releaseSlot, .askFinishedHook]
            }
            phase = .finished
            return [.releaseSlot, .emitFinished]

        case (.finalizing, .finishedVerdict(let verdict)):
            switch verdict {
            case .keep:
                // The engine has already moved the file if the hook asked for it.
                phase = .finished
                return [.emitFinished]
            case .fail(let error):
                phase = .failed
                return [.emitFailed(error)]
            }

        case (.requesting, .transferFailed(let error, let delay, let askHook)),
            (.awaitingVerdict, .transferFailed(let error, let delay, let askHook)),
            (.receiving, .transferFailed(let error, let delay, let askHook)):
            if askHook {
                phase = .awaitingFailureVerdict
                pendingFailure = (error, delay)
                return [.releaseSlot, .askFailedHook(retrying: delay != nil)]
            }
            return [.releaseSlot] + settle(error, retryAfter: delay)

        case (.awaitingFailureVerdict, .failureVerdict(let verdict)):
            guard let (error, delay) = pendingFailure else { return [] }
            pendingFailure = nil
            switch verdict {
            case .policy:
                return settle(error, retryAfter: delay)
            case .giveUp:
                return settle(error, retryAfter: nil)
            case .retry(let seconds):
                if delay == nil {
                    guard hookRetries < Self.hookRetryCap else {
                        return settle(error, retryAfter: nil)
                    }
                    hookRetries += 1
                }
                return settle(error, retryAfter: max(0, seconds))
            }

        case (.waitingRetry, .retryDue):
            phase = .queued
            return [.enqueue]

        case (.queued, .pause), (.waitingRetry, .pause), (.awaitingFailureVerdict, .pause):
            phase = .paused
            return [.dequeue, .emitPaused]
        case (.requesting, .pause), (.awaitingVerdict, .pause), (.receiving, .pause):
            phase = .paused
            return [.abortTransfer(keepPart: true), .releaseSlot, .emitPaused]

        case (.paused, .resume):
            phase = .queued
            return [.enqueue]

        case (.queued, .cancel), (.waitingRetry, .cancel), (.paused, .cancel),
            (.awaitingFailureVerdict, .cancel):
            phase = .cancelled
            return [.dequeue, .removePartFile, .emitCancelled]
        case (.requesting, .cancel), (.awaitingVerdict, .cancel), (.receiving, .cancel):
            phase = .cancelled
            return [.abortTransfer(keepPart: false), .removePartFile, .releaseSlot,
                    .emitCancelled]

        case (.requesting, .fail(let error)), (.awaitingVerdict, .fail(let error)),
            (.receiving, .fail(let error)):
            phase = .failed
            return [.abortTransfer(keepPart: false), .removePartFile, .releaseSlot, .emitFailed(error)]
        case (.queued, .fail(let error)), (.waitingRetry, .fail(let error)),
            (.paused, .fail(let error)), (.awaitingFailureVerdict, .fail(let error)):
            phase = .failed
            return [.dequeue, .removePartFile, .emitFailed(error)]

        default:
            return []
        }
    }

    /// Ends an attempt's failure: a retry after `retryAfter` seconds, or the end.
    private mutating func settle(_ error: DownloadError, retryAfter: Double?) -> [Action] {
        if let retryAfter {
            phase = .waitingRetry
            return [.emitRetrying(error, delay: retryAfter), .scheduleRetry(after: retryAfter)]
        }
        phase = .failed
        // A network error or timeout keeps its part file: the next run resumes
        // it (SPEC 3). Other failures leave nothing behind.
        return error.isRetryable ? [.emitFailed(error)] : [.removePartFile, .emitFailed(error)]
    }
}
