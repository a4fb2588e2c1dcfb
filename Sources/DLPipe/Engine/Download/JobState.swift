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
    private(set) var phase: Phase = .queued
    /// Where every attempt starts: the request's URL and method.
    private let firstHop: (url: String, method: RequestMethod)
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
        [.finished, .skipped, .failed, .handled, .cancelled].contains(phase.kind)
    }

    /// Whether a transfer slot is held.
    var holdsSlot: Bool {
        [.requesting, .awaitingVerdict, .holdingBody, .receiving].contains(phase.kind)
    }

    /// A download whose attempts ask `url` with `method` first.
    init(url: String = "", method: RequestMethod = .get) {
        firstHop = (url, method)
    }

    static func == (a: JobState, b: JobState) -> Bool {
        a.phase.kind == b.phase.kind && a.attempt == b.attempt && a.hookRetries == b.hookRetries
    }

    /// Changes the attempt under way in place; nil in a phase that carries none.
    @discardableResult
    mutating func updateAttempt<Result>(_ change: (inout Attempt) -> Result) -> Result? {
        guard var under = phase.attempt else { return nil }
        defer { phase = phase.carrying(under) }
        return change(&under)
    }

    /// Counts `attempts` made before this download came here (a shared
    /// queue's retry, taken by this worker): the next start is one more.
    mutating func continueAfter(attempts: Int) {
        precondition(phase.kind == .queued && attempt == 0)
        attempt = max(0, attempts)
    }

    /// Ends a download that never started (a rejected URL).
    mutating func endBeforeStart(_ terminal: Phase) {
        precondition(phase.kind == .queued && [.failed, .skipped].contains(terminal.kind))
        phase = terminal
    }

    /// Applies one input and returns the actions to perform. An impossible
    /// input stops a debug build, and is logged and counted in a release
    /// build (`ImpossibleTransitions`): never dropped unseen.
    mutating func handle(_ input: Input) -> [Action] {
        switch step(input) {
        case .moved(let actions): return actions
        case .late: return []
        case .impossible:
            ImpossibleTransitions.report(input: input, phase: phase.kind)
            return []
        }
    }

    /// Applies one input: one function per phase (or group of phases that
    /// answer alike), each listing the inputs it takes.
    mutating func step(_ input: Input) -> Step {
        switch phase {
        case .queued: return whileQueued(input)
        case .waitingRetry: return whileWaitingRetry(input)
        case .requesting, .awaitingVerdict, .holdingBody, .receiving: return whileTransferring(input)
        case .awaitingDurability: return whileAwaitingDurability(input)
        case .placingHeldBody: return whilePlacingHeldBody(input)
        case .linked, .finalizing: return whilePlaced(input)
        case .awaitingRetryVerdict: return whileAwaitingRetryVerdict(input)
        case .awaitingFailureVerdict: return whileAwaitingFailureVerdict(input)
        case .paused: return whilePaused(input)
        case .finished, .skipped, .failed, .handled, .cancelled: return lateOrImpossible(input)
        }
    }

    private mutating func whileQueued(_ input: Input) -> Step {
        switch input {
        case .start:
            phase = .requesting(Attempt(url: firstHop.url, method: firstHop.method))
            attempt += 1
            return .moved([.startTransfer])
        case .alreadyFinished(let askHook):
            return succeed(askHook: askHook, releasing: [])
        case .pause, .cancel, .fail:
            return stopOutOfTransfer(input)
        default:
            return lateOrImpossible(input)
        }
    }

    private mutating func whileWaitingRetry(_ input: Input) -> Step {
        switch input {
        case .retryDue:
            phase = .queued
            return .moved([.enqueue])
        case .pause, .cancel, .fail:
            return stopOutOfTransfer(input)
        default:
            return lateOrImpossible(input)
        }
    }

    /// requesting, awaitingVerdict, holdingBody, receiving: a transfer and its slot are held.
    private mutating func whileTransferring(_ input: Input) -> Step {
        switch (phase, input) {
        case (.requesting(let under), .responseArrived(let askHook)):
            phase = askHook ? .awaitingVerdict(under) : .receiving(under)
            return .moved(askHook ? [.askResponseHook] : [])
        case (.awaitingVerdict(let under), .transferEndedDuringVerdict):
            phase = .holdingBody(under)
            return .moved([])
        case (.requesting, .hopRefused(let reason)):
            // Between hops: the abort drops what waits for the hop; the part file stays.
            phase = .skipped
            return .moved([.abortTransfer(keepPart: true), .releaseSlot, .emitSkipped(reason)])
        case (.awaitingVerdict(let under), .responseVerdict(let verdict)),
            (.holdingBody(let under), .responseVerdict(let verdict)):
            return responseDecided(verdict, under)
        case (.receiving, .bodyChecked(let held)):
            // Its transfer is over: the slot goes to the next download now.
            phase = held ? .placingHeldBody : .awaitingDurability
            return .moved([.releaseSlot])
        case (.requesting, .transferSucceeded(let askHook)), (.receiving, .transferSucceeded(let askHook)):
            return succeed(askHook: askHook, releasing: [.releaseSlot])
        case (_, .transferFailed(let error, let delay, let askRetrying, let askFailed)):
            return attemptFailed(error, policyDelay: delay, askRetrying: askRetrying, askFailed: askFailed)
        case (_, .pause):
            phase = .paused
            return .moved([.abortTransfer(keepPart: true), .releaseSlot, .emitPaused])
        case (_, .cancel):
            phase = .cancelled
            return .moved([.abortTransfer(keepPart: false), .removePartFile, .releaseSlot, .emitCancelled])
        case (_, .fail(let error)):
            phase = .failed
            return .moved([.abortTransfer(keepPart: false), .removePartFile, .releaseSlot, .emitFailed(error)])
        default:
            return lateOrImpossible(input)
        }
    }

    /// The `response` hook's verdict, with the transfer paused or ended (holdingBody).
    private mutating func responseDecided(_ verdict: ResponseVerdict, _ under: Attempt) -> Step {
        switch verdict {
        case .proceed:
            // A rename was applied by the engine before this input.
            let ended = phase.kind == .holdingBody
            phase = .receiving(under)
            return .moved([ended ? .completeTransfer : .continueTransfer])
        case .skip(let reason):
            phase = .skipped
            return .moved([.abortTransfer(keepPart: false), .removePartFile, .releaseSlot, .emitSkipped(reason)])
        case .fail(let error):
            phase = .failed
            return .moved([.abortTransfer(keepPart: false), .removePartFile, .releaseSlot, .emitFailed(error)])
        }
    }

    private mutating func whileAwaitingDurability(_ input: Input) -> Step {
        switch input {
        case .transferSucceeded(let askHook):
            return succeed(askHook: askHook, releasing: [])
        case .transferFailed(let error, let delay, let askRetrying, let askFailed):
            return attemptFailed(error, policyDelay: delay, askRetrying: askRetrying, askFailed: askFailed)
        case .pause:
            // The whole part file stays; a resume asks for the rest (416: start over).
            phase = .paused
            return .moved([.emitPaused])
        case .cancel:
            phase = .cancelled
            return .moved([.removePartFile, .emitCancelled])
        case .fail(let error):
            phase = .failed
            return .moved([.removePartFile, .emitFailed(error)])
        default:
            return lateOrImpossible(input)
        }
    }

    /// The held body is on the syncfs queue: a stop first takes it back.
    private mutating func whilePlacingHeldBody(_ input: Input) -> Step {
        switch input {
        case .bodyChecked(held: false):
            // The file system cannot link unnamed files: the body was written
            // as a part file, which waits for the next batch.
            phase = .awaitingDurability
            return .moved([])
        case .pause, .cancel, .fail:
            stopAfterWithdrawal = input
            return .moved([.withdrawHeldBody])
        case .heldBodyWithdrawn:
            guard let stop = stopAfterWithdrawal else { return .impossible }
            stopAfterWithdrawal = nil
            phase = .awaitingDurability
            return whileAwaitingDurability(stop)
        case .heldBodyLinked:
            stopAfterWithdrawal = nil
            phase = .linked
            return .moved([])
        case .transferSucceeded(let askHook):
            return succeed(askHook: askHook, releasing: [])
        case .transferFailed(let error, let delay, let askRetrying, let askFailed):
            return attemptFailed(error, policyDelay: delay, askRetrying: askRetrying, askFailed: askFailed)
        default:
            return lateOrImpossible(input)
        }
    }

    /// linked, finalizing: the file is in place (or linked) and only the
    /// `finished` hook or event remains: a stop comes too late.
    private mutating func whilePlaced(_ input: Input) -> Step {
        switch (phase, input) {
        case (.linked, .transferSucceeded(let askHook)):
            return succeed(askHook: askHook, releasing: [])
        case (.finalizing, .finishedVerdict(.keep)):
            // The engine has already moved the file if the hook asked for it.
            phase = .finished
            return .moved([.emitFinished])
        case (.finalizing, .finishedVerdict(.fail(let error))):
            phase = .failed
            return .moved([.emitFailed(error)])
        case (_, .pause), (_, .cancel), (_, .fail):
            return .late
        default:
            return lateOrImpossible(input)
        }
    }

    private mutating func whileAwaitingRetryVerdict(_ input: Input) -> Step {
        guard case .retryVerdict(let verdict) = input else { return stopOutOfTransfer(input) }
        guard let (error, delay, askFailed) = pendingFailure else { return .impossible }
        pendingFailure = nil
        switch verdict {
        case .proceed: return retry(error, after: delay ?? 0)
        case .delay(let seconds): return retry(error, after: max(0, seconds))
        case .giveUp: return conclude(error, askFailed: askFailed)
        case .fail(let hookError):
            // The hook broke: no retry, and no `failed` hook for a hook's own error.
            phase = .failed
            return .moved([.removePartFile, .emitFailed(hookError)])
        }
    }

    private mutating func whileAwaitingFailureVerdict(_ input: Input) -> Step {
        guard case .failureVerdict(let verdict) = input else { return stopOutOfTransfer(input) }
        guard let (error, _, _) = pendingFailure else { return .impossible }
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
            return .moved([.removePartFile, .emitHandled(error)])
        }
    }

    private mutating func whilePaused(_ input: Input) -> Step {
        switch input {
        case .resume:
            phase = .queued
            return .moved([.enqueue])
        case .pause:
            return .late
        case .cancel, .fail:
            return stopOutOfTransfer(input)
        default:
            return lateOrImpossible(input)
        }
    }

    /// A pause, cancel or fail with no transfer running (queued, waiting for a
    /// retry or a hook's verdict, paused): the download leaves the queue.
    /// Any other input goes on to `lateOrImpossible`.
    private mutating func stopOutOfTransfer(_ input: Input) -> Step {
        switch input {
        case .pause:
            phase = .paused
            return .moved([.dequeue, .emitPaused])
        case .cancel:
            phase = .cancelled
            return .moved([.dequeue, .removePartFile, .emitCancelled])
        case .fail(let error):
            phase = .failed
            return .moved([.dequeue, .removePartFile, .emitFailed(error)])
        default:
            return lateOrImpossible(input)
        }
    }

    /// An input the current phase does not take: one that may come late or
    /// twice changes nothing; any other is impossible.
    private func lateOrImpossible(_ input: Input) -> Step {
        switch input {
        case .start:
            // A queue entry of a download that left the queue (paused, cancelled,
            // ended by what the state knew).
            return .late
        case .retryDue:
            // A timer set before a pause, a resume or a cancel.
            return .late
        case .responseVerdict, .finishedVerdict, .retryVerdict, .failureVerdict:
            // A hook's reply about a download that was paused, cancelled or
            // failed while the hook ran.
            return .late
        case .resume:
            // Not paused (any more).
            return .late
        case .pause, .cancel, .fail:
            // Every phase that still runs takes a stop: here it has ended.
            return isTerminal ? .late : .impossible
        default:
            return .impossible
        }
    }

    /// The body is in place: the `finished` hook decides, or the download ends.
    private mutating func succeed(askHook: Bool, releasing release: [Action]) -> Step {
        phase = askHook ? .finalizing : .finished
        return .moved(release + [askHook ? .askFinishedHook : .emitFinished])
    }

    /// The attempt failed: a retry the policy grants (the `retrying` hook may
    /// decide first), or the end (the `failed` hook may decide first).
    private mutating func attemptFailed(
        _ error: DownloadError, policyDelay delay: Double?, askRetrying: Bool, askFailed: Bool
    ) -> Step {
        let release: [Action] = holdsSlot ? [.releaseSlot] : []
        let next: [Action]
        if let delay, askRetrying {
            phase = .awaitingRetryVerdict
            pendingFailure = (error, delay, askFailed)
            next = [.askRetryingHook(delay: delay)]
        } else if let delay {
            next = retry(error, after: delay).actions
        } else {
            next = conclude(error, askFailed: askFailed).actions
        }
        return .moved(release + next)
    }

    /// Another attempt after `seconds`.
    private mutating func retry(_ error: DownloadError, after seconds: Double) -> Step {
        phase = .waitingRetry
        retryingAfter = error
        return .moved([.emitRetrying(error, delay: seconds), .scheduleRetry(after: seconds)])
    }

    /// No retry follows: the `failed` hook decides when one wants to, else the
    /// download fails.
    private mutating func conclude(_ error: DownloadError, askFailed: Bool) -> Step {
        guard askFailed else { return fail(error) }
        phase = .awaitingFailureVerdict
        pendingFailure = (error, nil, false)
        return .moved([.askFailedHook])
    }

    /// The end, failed.
    private mutating func fail(_ error: DownloadError) -> Step {
        phase = .failed
        // A network error or timeout keeps its part file: the next run resumes
        // it (SPEC 3; the engine drops one it could not resume, without a
        // validator). Other failures leave nothing behind.
        return .moved(error.isRetryable ? [.emitFailed(error)] : [.removePartFile, .emitFailed(error)])
    }
}
