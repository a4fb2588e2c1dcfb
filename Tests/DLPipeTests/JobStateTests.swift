import Testing

@testable import DLPipe

/// The download state machine, with no I/O.
@Suite struct JobStateTests {
    private func started() -> JobState {
        var state = JobState()
        #expect(state.handle(.start) == [.startTransfer])
        return state
    }

    @Test func happyPathWithoutHooks() {
        var state = started()
        #expect(state.handle(.responseArrived(askHook: false)) == [])
        #expect(state.phase == .receiving)
        #expect(state.handle(.transferSucceeded(askHook: false)) == [.releaseSlot, .emitFinished])
        #expect(state.isTerminal)
        #expect(state.handle(.cancel) == [], "a terminal state takes no more input")
    }

    @Test func responseHookHoldsTheTransferUntilItsVerdict() {
        var state = started()
        #expect(state.handle(.responseArrived(askHook: true)) == [.askResponseHook])
        #expect(state.phase == .awaitingVerdict)
        #expect(state.holdsSlot)
        #expect(state.handle(.responseVerdict(.proceed(name: "x", directory: nil))) == [.continueTransfer])
        #expect(state.phase == .receiving)
    }

    @Test func skipAbortsAndWritesNothing() {
        var state = started()
        _ = state.handle(.responseArrived(askHook: true))
        let actions = state.handle(.responseVerdict(.skip(reason: "not an image")))
        #expect(actions == [.abortTransfer(keepPart: false), .removePartFile, .releaseSlot, .emitSkipped("not an image")])
        #expect(state.phase == .skipped)
    }

    @Test func retryableFailureWaitsThenRequeues() {
        var state = started()
        let error = DownloadError(.network, "reset")
        let actions = state.handle(.transferFailed(error, policyDelay: 2, askRetrying: false, askFailed: true))
        #expect(actions == [.releaseSlot, .emitRetrying(error, delay: 2), .scheduleRetry(after: 2)])
        #expect(state.phase == .waitingRetry)
        #expect(state.handle(.retryDue) == [.enqueue])
        #expect(state.handle(.start) == [.startTransfer])
        #expect(state.attempt == 2)
    }

    @Test func failureWithoutRetryIsTerminal() {
        var state = started()
        let error = DownloadError(.http, "404", status: 404)
        #expect(state.handle(.transferFailed(error, policyDelay: nil, askRetrying: true, askFailed: false))
            == [.releaseSlot, .removePartFile, .emitFailed(error)])
        #expect(state.phase == .failed)
    }

    @Test func failedHookCanForceARetryButOnlyUpToTheCap() {
        var state = JobState()
        let error = DownloadError(.http, "404", status: 404)
        for round in 0...JobState.hookRetryCap {
            _ = state.handle(.start)
            #expect(state.handle(.transferFailed(error, policyDelay: nil, askRetrying: true, askFailed: true))
                == [.releaseSlot, .askFailedHook])
            let actions = state.handle(.failureVerdict(.retry(after: 5)))
            if round < JobState.hookRetryCap {
                #expect(actions.contains(.scheduleRetry(after: 5)))
                _ = state.handle(.retryDue)
            } else {
                #expect(actions == [.removePartFile, .emitFailed(error)], "the hard cap ends it")
            }
        }
    }

    @Test func retryingHookCanGiveUpOnARetryableErrorThenFailedDecides() {
        var state = started()
        let error = DownloadError(.timeout, "slow")
        #expect(state.handle(.transferFailed(error, policyDelay: 1, askRetrying: true, askFailed: true))
            == [.releaseSlot, .askRetryingHook(delay: 1)])
        #expect(state.phase == .awaitingRetryVerdict)
        #expect(state.handle(.retryVerdict(.giveUp)) == [.askFailedHook], "no retry follows: failed runs")
        #expect(state.handle(.failureVerdict(.giveUp)) == [.emitFailed(error)], "a timeout keeps its part file for the next run")
        var alone = started()
        _ = alone.handle(.transferFailed(error, policyDelay: 1, askRetrying: true, askFailed: false))
        #expect(alone.handle(.retryVerdict(.giveUp)) == [.emitFailed(error)])
    }

    @Test func retryingHookKeepsOrChangesTheDelay() {
        let error = DownloadError(.network, "reset")
        var kept = started()
        _ = kept.handle(.transferFailed(error, policyDelay: 2, askRetrying: true, askFailed: true))
        #expect(kept.handle(.retryVerdict(.proceed)) == [.emitRetrying(error, delay: 2), .scheduleRetry(after: 2)])
        var changed = started()
        _ = changed.handle(.transferFailed(error, policyDelay: 2, askRetrying: true, askFailed: true))
        #expect(changed.handle(.retryVerdict(.delay(7))) == [.emitRetrying(error, delay: 7), .scheduleRetry(after: 7)])
        #expect(changed.hookRetries == 0, "a retry the policy granted is not one past the budget")
    }

    @Test func aBrokenRetryingHookFailsTheDownloadWithItsOwnError() {
        var state = started()
        _ = state.handle(.transferFailed(DownloadError(.network, "reset"), policyDelay: 2, askRetrying: true, askFailed: true))
        let hookError = DownloadError(.hook, "job.lua:3: boom")
        #expect(state.handle(.retryVerdict(.fail(hookError))) == [.removePartFile, .emitFailed(hookError)])
        #expect(state.phase == .failed)
    }

    @Test func failedHookRunsOnlyWhenNoRetryFollows() {
        var state = started()
        let error = DownloadError(.network, "reset")
        #expect(state.handle(.transferFailed(error, policyDelay: 1, askRetrying: false, askFailed: true))
            == [.releaseSlot, .emitRetrying(error, delay: 1), .scheduleRetry(after: 1)], "a retry follows: no failed hook")
    }

    @Test func handledFailureEndsHandledAndDropsThePartFile() {
        var state = started()
        let error = DownloadError(.network, "reset")
        _ = state.handle(.transferFailed(error, policyDelay: nil, askRetrying: true, askFailed: true))
        #expect(state.handle(.failureVerdict(.handled)) == [.removePartFile, .emitHandled(error)],
                "a fallback replaces it: its part file would only hold the name")
        #expect(state.phase == .handled && state.isTerminal)
    }

    @Test func alreadyFinishedFilesRaiseFinishedThroughTheHook() {
        var asked = JobState()
        #expect(asked.handle(.alreadyFinished(askHook: true)) == [.askFinishedHook])
        #expect(!asked.holdsSlot)
        #expect(asked.handle(.finishedVerdict(.keep())) == [.emitFinished])
        var plain = JobState()
        #expect(plain.handle(.alreadyFinished(askHook: false)) == [.emitFinished])
        #expect(plain.phase == .finished)
    }

    @Test func pauseWhileTheRetryingOrFailedHookDecides() {
        var state = started()
        _ = state.handle(.transferFailed(DownloadError(.network, "reset"), policyDelay: 1, askRetrying: true, askFailed: true))
        #expect(state.handle(.pause) == [.dequeue, .emitPaused])
        #expect(state.handle(.retryVerdict(.proceed)) == [], "the late verdict changes nothing")
        #expect(state.handle(.resume) == [.enqueue])
        var failing = started()
        _ = failing.handle(.transferFailed(DownloadError(.http, "404", status: 404), policyDelay: nil, askRetrying: true, askFailed: true))
        #expect(failing.handle(.cancel) == [.dequeue, .removePartFile, .emitCancelled])
        #expect(failing.handle(.failureVerdict(.handled)) == [])
    }

    @Test func pauseKeepsThePartAndResumeRequeues() {
        var state = started()
        _ = state.handle(.responseArrived(askHook: false))
        #expect(state.handle(.pause) == [.abortTransfer(keepPart: true), .releaseSlot, .emitPaused])
        #expect(state.handle(.pause) == [], "pausing twice does nothing more")
        #expect(state.handle(.resume) == [.enqueue])
        #expect(state.phase == .queued)
    }

    @Test func cancelFromEveryLivePhaseEndsOnce() {
        var queued = JobState()
        #expect(queued.handle(.cancel) == [.dequeue, .removePartFile, .emitCancelled])
        var running = started()
        #expect(running.handle(.cancel) == [.abortTransfer(keepPart: false), .removePartFile, .releaseSlot, .emitCancelled])
        var paused = started()
        _ = paused.handle(.pause)
        #expect(paused.handle(.cancel) == [.dequeue, .removePartFile, .emitCancelled])
        #expect(paused.handle(.cancel) == [])
    }

    @Test func lateVerdictsAfterPauseAreIgnored() {
        var state = started()
        _ = state.handle(.responseArrived(askHook: true))
        _ = state.handle(.pause)
        #expect(state.handle(.responseVerdict(.proceed())) == [])
        #expect(state.phase == .paused)
    }

    @Test func finishedHookRunsAfterTheSlotIsFree() {
        var state = started()
        _ = state.handle(.responseArrived(askHook: false))
        #expect(state.handle(.transferSucceeded(askHook: true)) == [.releaseSlot, .askFinishedHook])
        #expect(state.handle(.finishedVerdict(.keep())) == [.emitFinished])
    }
}
