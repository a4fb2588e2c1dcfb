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
        #expect(state.phase.kind == .receiving)
        #expect(state.handle(.transferSucceeded(askHook: false)) == [.releaseSlot, .emitFinished])
        #expect(state.isTerminal)
        #expect(state.handle(.cancel) == [], "a terminal state takes no more input")
    }

    @Test func responseHookHoldsTheTransferUntilItsVerdict() {
        var state = started()
        #expect(state.handle(.responseArrived(askHook: true)) == [.askResponseHook])
        #expect(state.phase.kind == .awaitingVerdict)
        #expect(state.holdsSlot)
        #expect(state.handle(.responseVerdict(.proceed(name: "x", directory: nil))) == [.continueTransfer])
        #expect(state.phase.kind == .receiving)
    }

    @Test func skipAbortsAndWritesNothing() {
        var state = started()
        _ = state.handle(.responseArrived(askHook: true))
        let actions = state.handle(.responseVerdict(.skip(reason: "not an image")))
        #expect(actions == [.abortTransfer(keepPart: false), .removePartFile, .releaseSlot, .emitSkipped("not an image")])
        #expect(state.phase.kind == .skipped)
    }

    @Test func retryableFailureWaitsThenRequeues() {
        var state = started()
        let error = DownloadError(.network, "reset")
        let actions = state.handle(.transferFailed(error, policyDelay: 2, askRetrying: false, askFailed: true))
        #expect(actions == [.releaseSlot, .emitRetrying(error, delay: 2), .scheduleRetry(after: 2)])
        #expect(state.phase.kind == .waitingRetry)
        #expect(state.handle(.retryDue) == [.enqueue])
        #expect(state.handle(.start) == [.startTransfer])
        #expect(state.attempt == 2)
    }

    @Test func failureWithoutRetryIsTerminal() {
        var state = started()
        let error = DownloadError(.http, "404", status: 404)
        #expect(state.handle(.transferFailed(error, policyDelay: nil, askRetrying: true, askFailed: false))
            == [.releaseSlot, .removePartFile, .emitFailed(error)])
        #expect(state.phase.kind == .failed)
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
        #expect(state.phase.kind == .awaitingRetryVerdict)
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
        #expect(state.phase.kind == .failed)
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
        #expect(state.phase.kind == .handled && state.isTerminal)
    }

    @Test func alreadyFinishedFilesRaiseFinishedThroughTheHook() {
        var asked = JobState()
        #expect(asked.handle(.alreadyFinished(askHook: true)) == [.askFinishedHook])
        #expect(!asked.holdsSlot)
        #expect(asked.handle(.finishedVerdict(.keep())) == [.emitFinished])
        var plain = JobState()
        #expect(plain.handle(.alreadyFinished(askHook: false)) == [.emitFinished])
        #expect(plain.phase.kind == .finished)
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
        #expect(state.phase.kind == .queued)
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
        #expect(state.phase.kind == .paused)
    }

    @Test func finishedHookRunsAfterTheSlotIsFree() {
        var state = started()
        _ = state.handle(.responseArrived(askHook: false))
        #expect(state.handle(.transferSucceeded(askHook: true)) == [.releaseSlot, .askFinishedHook])
        #expect(state.handle(.finishedVerdict(.keep())) == [.emitFinished])
    }
    private func receiving() -> JobState {
        var state = started()
        _ = state.handle(.responseArrived(askHook: false))
        return state
    }

    @Test func aTransferThatEndsWhileTheResponseHookDecidesHoldsItsBody() {
        var state = started()
        _ = state.handle(.responseArrived(askHook: true))
        #expect(state.handle(.transferEndedDuringVerdict) == [])
        #expect(state.phase.kind == .holdingBody)
        #expect(state.holdsSlot, "the slot is freed when the body is checked, not before")
        #expect(state.handle(.responseVerdict(.proceed())) == [.completeTransfer], "not an unpause: curl is done")
        #expect(state.phase.kind == .receiving)

        var skipped = started()
        _ = skipped.handle(.responseArrived(askHook: true))
        _ = skipped.handle(.transferEndedDuringVerdict)
        #expect(skipped.handle(.responseVerdict(.skip(reason: "no"))) == [
            .abortTransfer(keepPart: false), .removePartFile, .releaseSlot, .emitSkipped("no"),
        ])
        var paused = started()
        _ = paused.handle(.responseArrived(askHook: true))
        _ = paused.handle(.transferEndedDuringVerdict)
        #expect(paused.handle(.pause) == [.abortTransfer(keepPart: true), .releaseSlot, .emitPaused])
        #expect(paused.handle(.responseVerdict(.proceed())) == [], "the verdict after the pause changes nothing")
        #expect(paused.phase.kind == .paused)
    }

    @Test func aCheckedPartFileFreesItsSlotAndWaitsForDurability() {
        var state = receiving()
        #expect(state.handle(.bodyChecked(held: false)) == [.releaseSlot])
        #expect(state.phase.kind == .awaitingDurability)
        #expect(!state.holdsSlot)
        #expect(state.handle(.transferSucceeded(askHook: false)) == [.emitFinished], "the slot is not freed twice")
        #expect(state.phase.kind == .finished)

        var hooked = receiving()
        _ = hooked.handle(.bodyChecked(held: false))
        #expect(hooked.handle(.transferSucceeded(askHook: true)) == [.askFinishedHook])
        #expect(hooked.phase.kind == .finalizing)
    }

    @Test func stopsWhileWaitingForDurabilityHaveNoTransferOrSlotToFree() {
        var paused = receiving()
        _ = paused.handle(.bodyChecked(held: false))
        #expect(paused.handle(.pause) == [.emitPaused])
        #expect(paused.handle(.resume) == [.enqueue])

        var cancelled = receiving()
        _ = cancelled.handle(.bodyChecked(held: false))
        #expect(cancelled.handle(.cancel) == [.removePartFile, .emitCancelled])

        var renameFailed = receiving()
        _ = renameFailed.handle(.bodyChecked(held: false))
        let error = DownloadError(.io, "cannot rename")
        #expect(renameFailed.handle(.transferFailed(error, policyDelay: nil, askRetrying: false, askFailed: false))
            == [.removePartFile, .emitFailed(error)])
        let network = DownloadError(.network, "vanished")
        var retried = receiving()
        _ = retried.handle(.bodyChecked(held: false))
        #expect(retried.handle(.transferFailed(network, policyDelay: 1, askRetrying: false, askFailed: false))
            == [.emitRetrying(network, delay: 1), .scheduleRetry(after: 1)])
    }

    @Test func aStopTakesAHeldBodyBackBeforeItIsLinked() {
        var state = receiving()
        #expect(state.handle(.bodyChecked(held: true)) == [.releaseSlot])
        #expect(state.phase.kind == .placingHeldBody)
        #expect(state.handle(.pause) == [.withdrawHeldBody], "the stop waits for the withdrawal")
        #expect(state.phase.kind == .placingHeldBody)
        #expect(state.handle(.heldBodyWithdrawn) == [.emitPaused], "then the pause applies")
        #expect(state.phase.kind == .paused)

        var cancelled = receiving()
        _ = cancelled.handle(.bodyChecked(held: true))
        #expect(cancelled.handle(.cancel) == [.withdrawHeldBody])
        #expect(cancelled.handle(.heldBodyWithdrawn) == [.removePartFile, .emitCancelled])
        #expect(cancelled.phase.kind == .cancelled)

        var failed = receiving()
        _ = failed.handle(.bodyChecked(held: true))
        let error = DownloadError(.hook, "broke")
        #expect(failed.handle(.fail(error)) == [.withdrawHeldBody])
        #expect(failed.handle(.heldBodyWithdrawn) == [.removePartFile, .emitFailed(error)])
    }

    @Test func aStopAfterTheLinkComesTooLate() {
        var state = receiving()
        _ = state.handle(.bodyChecked(held: true))
        #expect(state.handle(.cancel) == [.withdrawHeldBody])
        #expect(state.handle(.heldBodyLinked) == [])
        #expect(state.phase.kind == .linked)
        #expect(state.handle(.pause) == [])
        #expect(state.handle(.cancel) == [])
        #expect(state.handle(.fail(DownloadError(.hook, "late"))) == [])
        #expect(state.phase.kind == .linked)
        #expect(state.handle(.transferSucceeded(askHook: false)) == [.emitFinished])
        #expect(state.phase.kind == .finished)
    }

    @Test func aHeldBodyThatCannotBeLinkedBecomesAPartFile() {
        var state = receiving()
        _ = state.handle(.bodyChecked(held: true))
        #expect(state.handle(.bodyChecked(held: false)) == [], "written as a part file, for the next batch")
        #expect(state.phase.kind == .awaitingDurability)
        #expect(state.handle(.transferSucceeded(askHook: false)) == [.emitFinished])

        var linkFailed = receiving()
        _ = linkFailed.handle(.bodyChecked(held: true))
        let error = DownloadError(.io, "cannot link")
        #expect(linkFailed.handle(.transferFailed(error, policyDelay: nil, askRetrying: false, askFailed: true))
            == [.askFailedHook])
    }

    @Test func lateInputsAreListedAndChangeNothing() {
        var paused = receiving()
        _ = paused.handle(.pause)
        #expect(paused.handle(.start) == [], "a stale queue entry")
        #expect(paused.handle(.retryDue) == [], "a stale timer")
        #expect(paused.handle(.retryVerdict(.proceed)) == [], "a hook's reply after the pause")
        #expect(paused.handle(.finishedVerdict(.keep())) == [])
        #expect(paused.phase.kind == .paused)

        var finalizing = receiving()
        _ = finalizing.handle(.transferSucceeded(askHook: true))
        #expect(finalizing.handle(.pause) == [])
        #expect(finalizing.handle(.cancel) == [])
        #expect(finalizing.handle(.resume) == [])
        #expect(finalizing.phase.kind == .finalizing)
    }
}
