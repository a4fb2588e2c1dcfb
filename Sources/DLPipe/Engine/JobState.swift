/// The life of one download as a value type: `handle` takes an input and returns the
/// actions to perform. No I/O here, so every transition is unit-tested directly.
///
/// queued -> requesting -> awaitingVerdict -> receiving -> awaitingDurability -> finalizing -> finished
///                     |             \-> holdingBody -/        \-> placingHeldBody -> linked -/
///                     \-> receiving (no response hook)
/// (awaitingDurability and placingHeldBody are skipped without a state; the
/// terminal phases are finished, failed, handled, skipped and cancelled.)
/// Any running phase can fail the attempt. When the retry policy grants a retry,
/// the `retrying` hook (if any) may change its delay or give up (awaitingRetryVerdict),
/// then waitingRetry. When no retry follows, the `failed` hook (if any) decides once
/// (awaitingFailureVerdict): the failure stands, is handled, or is retried past the budget.
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
        /// The `response` hook is deciding and the transfer has already ended:
        /// its body (if any) waits in memory for the verdict.
        case holdingBody
        /// Body bytes stream to the part file.
        case receiving
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
    }

    enum Input: Equatable {
        /// The scheduler gave this download a transfer slot.
        case start
        /// The final response arrived; `askHook` when a response hook wants it.
        case responseArrived(askHook: Bool)
        /// The transfer ended while the response hook decides.
        case transferEndedDuringVerdict
        case responseVerdict(ResponseVerdict)
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

    private(set) var phase: Phase = .queued
    /// Attempts started so far.
    private(set) var attempt = 0
    /// The failure the scheduled retry follows (a shared queue keeps it as the
    /// download's last error while the retry waits there).
    private(set) var retryingAfter: DownloadError?
    /// Retries granted by hooks past the policy's budget.
    private(set) var hookRetries = 0
    /// The failure waiting for the `retrying` or `failed` hook's verdict, with
    /// the policy's delay and whether a `failed` hook follows a give-up.
    private var pendingFailure: (error: DownloadError, policyDelay: Double?, askFailed: Bool)?
    /// A pause, cancel or fail that waits for a held body's withdrawal.
    private var stopAfterWithdrawal: Input?
    /// The failure the `retrying` or `failed` hook is deciding about.
    var pendingError: DownloadError? { pendingFailure?.error }
    /// Retries a hook may force past the budget: a bound on `dl.retry` loops.
    static let hookRetryCap = 20

    var isTerminal: Bool {
        [.finished, .skipped, .failed, .handled, .cancelled].contains(phase)
    }

    /// Whether a transfer slot is held.
    var holdsSlot: Bool {
        [.requesting, .awaitingVerdict, .holdingBody, .receiving].contains(phase)
    }

    static func == (a: JobState, b: JobState) -> Bool {
        a.phase == b.phase && a.attempt == b.attempt && a.hookRetries == b.hookRetries
    }

    /// Counts `attempts` made before this download came here (a shared
    /// queue's retry, taken by this worker): the next start is one more.
    mutating func continueAfter(attempts: Int) {
        precondition(phase == .queued && attempt == 0)
        attempt = max(0, attempts)
    }

    /// Ends a download that never started (a rejected URL).
    mutating func endBeforeStart(_ terminal: Phase) {
        precondition(phase == .queued && [.failed, .skipped].contains(terminal))
        phase = terminal
    }

    /// Applies one input. Inputs that may come late or twice (a stale queue
    /// entry or timer, a hook's reply after a pause, a stop after the end)
    /// change nothing and are listed; any other that does not fit the phase is
    /// a bug in the engine, and stops a debug build.
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

        case (.awaitingVerdict, .transferEndedDuringVerdict):
            phase = .holdingBody
            return []

        case (.awaitingVerdict, .responseVerdict(let verdict)), (.holdingBody, .responseVerdict(let verdict)):
            switch verdict {
            case .proceed:
                // A rename was applied by the engine before this input.
                let ended = phase == .holdingBody
                phase = .receiving
                return [ended ? .completeTransfer : .continueTransfer]
            case .skip(let reason):
                phase = .skipped
                return [.abortTransfer(keepPart: false), .removePartFile, .releaseSlot,
                        .emitSkipped(reason)]
            case .fail(let error):
                phase = .failed
                return [.abortTransfer(keepPart: false), .removePartFile, .releaseSlot,
                        .emitFailed(error)]
            }

        case (.receiving, .bodyChecked(let held)):
            // Its transfer is over: the slot goes to the next download now.
            phase = held ? .placingHeldBody : .awaitingDurability
            return [.releaseSlot]
        case (.placingHeldBody, .bodyChecked(held: false)):
            // The file system cannot link unnamed files: the body was written
            // as a part file, which waits for the next batch.
            phase = .awaitingDurability
            return []

        case (.placingHeldBody, .pause), (.placingHeldBody, .cancel), (.placingHeldBody, .fail):
            stopAfterWithdrawal = input
            return [.withdrawHeldBody]
        case (.placingHeldBody, .heldBodyWithdrawn):
            guard let stop = stopAfterWithdrawal else { return unexpected(input) }
            stopAfterWithdrawal = nil
            phase = .awaitingDurability
            return handle(stop)
        case (.placingHeldBody, .heldBodyLinked):
            stopAfterWithdrawal = nil
            phase = .linked
            return []

        case (.requesting, .transferSucceeded(let askHook)),
            (.receiving, .transferSucceeded(let askHook)):
            return succeed(askHook: askHook, releasing: [.releaseSlot])
        case (.awaitingDurability, .transferSucceeded(let askHook)),
            (.placingHeldBody, .transferSucceeded(let askHook)),
            (.linked, .transferSucceeded(let askHook)):
            return succeed(askHook: askHook, releasing: [])

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

        case (.queued, .alreadyFinished(let askHook)):
            return succeed(askHook: askHook, releasing: [])

        case (.requesting, .transferFailed(let error, let delay, let askRetrying, let askFailed)),
            (.awaitingVerdict, .transferFailed(let error, let delay, let askRetrying, let askFailed)),
            (.holdingBody, .transferFailed(let error, let delay, let askRetrying, let askFailed)),
            (.receiving, .transferFailed(let error, let delay, let askRetrying, let askFailed)),
            (.awaitingDurability, .transferFailed(let error, let delay, let askRetrying, let askFailed)),
            (.placingHeldBody, .transferFailed(let error, let delay, let askRetrying, let askFailed)):
            let release: [Action] = holdsSlot ? [.releaseSlot] : []
            guard let delay else { return release + conclude(error, askFailed: askFailed) }
            if askRetrying {
                phase = .awaitingRetryVerdict
                pendingFailure = (error, delay, askFailed)
                return release + [.askRetryingHook(delay: delay)]
            }
            return release + retry(error, after: delay)

        case (.awaitingRetryVerdict, .retryVerdict(let verdict)):
            guard let (error, delay, askFailed) = pendingFailure else { return unexpected(input) }
            pendingFailure = nil
            switch verdict {
            case .proceed: return retry(error, after: delay ?? 0)
            case .delay(let seconds): return retry(error, after: max(0, seconds))
            case .giveUp: return conclude(error, askFailed: askFailed)
            case .fail(let hookError):
                // The hook broke: no retry, and no `failed` hook for a hook's own error.
                phase = .failed
                return [.removePartFile, .emitFailed(hookError)]
            }

        case (.awaitingFailureVerdict, .failureVerdict(let verdict)):
            guard let (error, _, _) = pendingFailure else { return unexpected(input) }
            pendingFailure = nil
            switch verdict {
            case .giveUp:
                return fail(error)
            case .retry(let seconds):
                guard hookRetries < Self.hookRetryCap else { return fail(error) }
                hookRetries += 1
                return retry(error, after: max(0, seconds))
            case .handled:
                // A fallback replaces this download: its part file will never be
                // resumed, and must not hold the name the fallback may take.
                phase = .handled
                return [.removePartFile, .emitHandled(error)]
            }

        case (.waitingRetry, .retryDue):
            phase = .queued
            return [.enqueue]

        case (.queued, .pause), (.waitingRetry, .pause), (.awaitingRetryVerdict, .pause),
            (.awaitingFailureVerdict, .pause):
            phase = .paused
            return [.dequeue, .emitPaused]
        case (.requesting, .pause), (.awaitingVerdict, .pause), (.holdingBody, .pause), (.receiving, .pause):
            phase = .paused
            return [.abortTransfer(keepPart: true), .releaseSlot, .emitPaused]
        case (.awaitingDurability, .pause):
            // The whole part file stays; a resume asks for the rest (416: start over).
            phase = .paused
            return [.emitPaused]

        case (.paused, .resume):
            phase = .queued
            return [.enqueue]

        case (.queued, .cancel), (.waitingRetry, .cancel), (.paused, .cancel),
            (.awaitingRetryVerdict, .cancel), (.awaitingFailureVerdict, .cancel):
            phase = .cancelled
            return [.dequeue, .removePartFile, .emitCancelled]
        case (.requesting, .cancel), (.awaitingVerdict, .cancel), (.holdingBody, .cancel), (.receiving, .cancel):
            phase = .cancelled
            return [.abortTransfer(keepPart: false), .removePartFile, .releaseSlot,
                    .emitCancelled]
        case (.awaitingDurability, .cancel):
            phase = .cancelled
            return [.removePartFile, .emitCancelled]

        case (.requesting, .fail(let error)), (.awaitingVerdict, .fail(let error)),
            (.holdingBody, .fail(let error)), (.receiving, .fail(let error)):
            phase = .failed
            return [.abortTransfer(keepPart: false), .removePartFile, .releaseSlot, .emitFailed(error)]
        case (.queued, .fail(let error)), (.waitingRetry, .fail(let error)),
            (.paused, .fail(let error)), (.awaitingRetryVerdict, .fail(let error)),
            (.awaitingFailureVerdict, .fail(let error)):
            phase = .failed
            return [.dequeue, .removePartFile, .emitFailed(error)]
        case (.awaitingDurability, .fail(let error)):
            phase = .failed
            return [.removePartFile, .emitFailed(error)]

        // Ignored, as they may come late or twice:
        case (_, .start):
            // A queue entry of a download that left the queue (paused, cancelled,
            // ended by what the state knew).
            return []
        case (_, .retryDue):
            // A timer set before a pause, a resume or a cancel.
            return []
        case (_, .responseVerdict), (_, .finishedVerdict), (_, .retryVerdict), (_, .failureVerdict):
            // A hook's reply about a download that was paused, cancelled or
            // failed while the hook ran.
            return []
        case (.paused, .pause), (.finalizing, .pause), (.linked, .pause),
            (.finalizing, .cancel), (.linked, .cancel),
            (.finalizing, .fail), (.linked, .fail):
            // Paused already; or the file is in place (or linked) and only the
            // `finished` hook or event remains: a stop comes too late.
            return []
        case (_, .resume):
            // Not paused (any more).
            return []
        case (.finished, .pause), (.skipped, .pause), (.failed, .pause), (.handled, .pause), (.cancelled, .pause),
            (.finished, .cancel), (.skipped, .cancel), (.failed, .cancel), (.handled, .cancel), (.cancelled, .cancel),
            (.finished, .fail), (.skipped, .fail), (.failed, .fail), (.handled, .fail), (.cancelled, .fail):
            // Ended: a stop changes nothing.
            return []

        default:
            return unexpected(input)
        }
    }

    /// The body is in place: the `finished` hook decides, or the download ends.
    private mutating func succeed(askHook: Bool, releasing release: [Action]) -> [Action] {
        if askHook {
            phase = .finalizing
            return release + [.askFinishedHook]
        }
        phase = .finished
        return release + [.emitFinished]
    }

    /// An input the engine should never send in this phase: a bug. Debug
    /// builds stop here; a release build changes nothing.
    private func unexpected(_ input: Input) -> [Action] {
        assertionFailure("JobState: \(input) in phase \(phase)")
        return []
    }

    /// Another attempt after `seconds`.
    private mutating func retry(_ error: DownloadError, after seconds: Double) -> [Action] {
        phase = .waitingRetry
        retryingAfter = error
        return [.emitRetrying(error, delay: seconds), .scheduleRetry(after: seconds)]
    }

    /// No retry follows: the `failed` hook decides when one wants to, else the
    /// download fails.
    private mutating func conclude(_ error: DownloadError, askFailed: Bool) -> [Action] {
        guard askFailed else { return fail(error) }
        phase = .awaitingFailureVerdict
        pendingFailure = (error, nil, false)
        return [.askFailedHook]
    }

    /// The end, failed.
    private mutating func fail(_ error: DownloadError) -> [Action] {
        phase = .failed
        // A network error or timeout keeps its part file: the next run resumes
        // it (SPEC 3; the engine drops one it could not resume, without a
        // validator). Other failures leave nothing behind.
        return error.isRetryable ? [.emitFailed(error)] : [.removePartFile, .emitFailed(error)]
    }
}
