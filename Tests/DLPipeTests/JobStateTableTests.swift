import Testing

@testable import DLPipe

/// Every phase x input pair of `JobState`: each one moves the state (with
/// actions that fit the move), is a late input that changes nothing, or is
/// impossible (which `handle` reports: `ImpossibleTransitions`). The table
/// below documents which; a pair that changes class fails here.
@Suite struct JobStateTableTests {
    private static let error = DownloadError(.network, "reset")
    /// The request's URL, where every attempt starts, and a redirect's target
    /// that the attempt under way has moved to (the representative payload).
    private static let url = "http://a.test/file"
    private static let hop = "http://b.test/file"

    /// A state in each phase, reached through the inputs the engine sends.
    /// `placingHeldBody, stopping` waits for a held body's withdrawal.
    static let routes: [(name: String, inputs: [JobState.Input])] = {
        let transferring: [JobState.Input] = [.start, .responseArrived(askHook: false)]
        let verdict: [JobState.Input] = [.start, .responseArrived(askHook: true)]
        let held = transferring + [.bodyChecked(held: true)]
        return [
            ("queued", []),
            ("waitingRetry", [.start, .transferFailed(error, policyDelay: 1, askRetrying: false, askFailed: false)]),
            ("requesting", [.start]),
            ("awaitingVerdict", verdict),
            ("holdingBody", verdict + [.transferEndedDuringVerdict]),
            ("receiving", transferring),
            ("awaitingDurability", transferring + [.bodyChecked(held: false)]),
            ("placingHeldBody", held),
            ("placingHeldBody, stopping", held + [.pause]),
            ("linked", held + [.heldBodyLinked]),
            ("finalizing", transferring + [.transferSucceeded(askHook: true)]),
            ("awaitingRetryVerdict", [.start, .transferFailed(error, policyDelay: 1, askRetrying: true, askFailed: true)]),
            ("awaitingFailureVerdict", [.start, .transferFailed(error, policyDelay: nil, askRetrying: true, askFailed: true)]),
            ("paused", [.pause]),
            ("finished", transferring + [.transferSucceeded(askHook: false)]),
            ("skipped", verdict + [.responseVerdict(.skip(reason: "no"))]),
            ("failed", [.fail(error)]),
            ("handled", [.start, .transferFailed(error, policyDelay: nil, askRetrying: false, askFailed: true),
                         .failureVerdict(.handled)]),
            ("cancelled", [.cancel]),
        ]
    }()

    /// One sample of every input (both values of a flag that changes the
    /// outcome), named for the table. The switch makes a new input case fail
    /// to compile here until it is sampled.
    static let inputs: [(name: String, input: JobState.Input)] = {
        let samples: [JobState.Input] = [
            .start, .responseArrived(askHook: true), .responseArrived(askHook: false), .transferEndedDuringVerdict,
            .responseVerdict(.proceed()), .responseVerdict(.skip(reason: "no")), .responseVerdict(.fail(error)),
            .hopRefused(reason: "robots.txt"),
            .bodyChecked(held: true), .bodyChecked(held: false), .heldBodyWithdrawn, .heldBodyLinked,
            .transferSucceeded(askHook: true), .transferSucceeded(askHook: false),
            .finishedVerdict(.keep()), .finishedVerdict(.fail(error)),
            .alreadyFinished(askHook: true), .alreadyFinished(askHook: false),
            .transferFailed(error, policyDelay: 1, askRetrying: true, askFailed: true),
            .transferFailed(error, policyDelay: 1, askRetrying: false, askFailed: false),
            .transferFailed(error, policyDelay: nil, askRetrying: false, askFailed: true),
            .transferFailed(error, policyDelay: nil, askRetrying: false, askFailed: false),
            .retryVerdict(.proceed), .retryVerdict(.delay(2)), .retryVerdict(.giveUp), .retryVerdict(.fail(error)),
            .failureVerdict(.giveUp), .failureVerdict(.retry(after: 2)), .failureVerdict(.handled),
            .retryDue, .pause, .resume, .cancel, .fail(error),
        ]
        return samples.map { (kind($0), $0) }
    }()

    static func kind(_ input: JobState.Input) -> String {
        switch input {
        case .start: "start"
        case .responseArrived: "responseArrived"
        case .transferEndedDuringVerdict: "transferEndedDuringVerdict"
        case .responseVerdict: "responseVerdict"
        case .hopRefused: "hopRefused"
        case .bodyChecked(let held): held ? "bodyChecked(held)" : "bodyChecked(part)"
        case .heldBodyWithdrawn: "heldBodyWithdrawn"
        case .heldBodyLinked: "heldBodyLinked"
        case .transferSucceeded: "transferSucceeded"
        case .finishedVerdict: "finishedVerdict"
        case .alreadyFinished: "alreadyFinished"
        case .transferFailed: "transferFailed"
        case .retryVerdict: "retryVerdict"
        case .failureVerdict: "failureVerdict"
        case .retryDue: "retryDue"
        case .pause: "pause"
        case .resume: "resume"
        case .cancel: "cancel"
        case .fail: "fail"
        }
    }

    /// The state a route reaches; in a phase that transfers, its attempt has
    /// followed a redirect, so that a move can be seen to carry it over.
    static func state(_ route: [JobState.Input]) -> JobState {
        var state = JobState(url: url, method: .get)
        for input in route { _ = state.handle(input) }
        state.updateAttempt { $0.follow(to: hop, method: .get) }
        return state
    }

    enum Class: String { case moves, late, impossible }

    /// The documented table: for each input, the routes where it moves the
    /// state and where it comes late; everywhere else it is impossible.
    static let table: [String: (moves: Set<String>, late: Set<String>)] = {
        let all = Set(routes.map(\.name))
        let transferring: Set = ["requesting", "awaitingVerdict", "holdingBody", "receiving"]
        let placing: Set = ["placingHeldBody", "placingHeldBody, stopping"]
        let waiting: Set = ["queued", "waitingRetry", "awaitingRetryVerdict", "awaitingFailureVerdict"]
        let ended: Set = ["finished", "skipped", "failed", "handled", "cancelled"]
        let stops = waiting.union(transferring).union(placing).union(["awaitingDurability"])
        /// Moves in `moves`, late everywhere else (a stale entry, timer or reply).
        func lateElsewhere(_ moves: Set<String>) -> (Set<String>, Set<String>) { (moves, all.subtracting(moves)) }
        return [
            "start": lateElsewhere(["queued"]),
            "responseArrived": (["requesting"], []),
            "transferEndedDuringVerdict": (["awaitingVerdict"], []),
            "responseVerdict": lateElsewhere(["awaitingVerdict", "holdingBody"]),
            "hopRefused": (["requesting"], []),
            "bodyChecked(held)": (["receiving"], []),
            "bodyChecked(part)": (placing.union(["receiving"]), []),
            "heldBodyWithdrawn": (["placingHeldBody, stopping"], []),
            "heldBodyLinked": (placing, []),
            "transferSucceeded": (placing.union(["requesting", "receiving", "awaitingDurability", "linked"]), []),
            "finishedVerdict": lateElsewhere(["finalizing"]),
            "alreadyFinished": (["queued"], []),
            "transferFailed": (transferring.union(placing).union(["awaitingDurability"]), []),
            "retryVerdict": lateElsewhere(["awaitingRetryVerdict"]),
            "failureVerdict": lateElsewhere(["awaitingFailureVerdict"]),
            "retryDue": lateElsewhere(["waitingRetry"]),
            "resume": lateElsewhere(["paused"]),
            "pause": (stops, ended.union(["linked", "finalizing", "paused"])),
            "cancel": (stops.union(["paused"]), ended.union(["linked", "finalizing"])),
            "fail": (stops.union(["paused"]), ended.union(["linked", "finalizing"])),
        ]
    }()

    @Test func everyPhaseHasARoute() {
        for (name, route) in Self.routes {
            #expect(name.hasPrefix("\(Self.state(route).phase.kind)"), "route \(name)")
        }
        let reached = Set(Self.routes.map { "\(Self.state($0.inputs).phase.kind)" })
        #expect(reached == Set(JobState.Phase.Kind.allCases.map { "\($0)" }))
        #expect(Set(Self.inputs.map(\.name)) == Set(Self.table.keys))
    }

    /// Only the phases that transfer carry an attempt; in any other phase
    /// there is none to change.
    @Test func onlyThePhasesThatTransferCarryAnAttempt() {
        let transferring: Set<JobState.Phase.Kind> = [.requesting, .awaitingVerdict, .holdingBody, .receiving]
        for (name, route) in Self.routes {
            var state = Self.state(route)
            let carries = transferring.contains(state.phase.kind)
            #expect((state.phase.attempt != nil) == carries, "route \(name)")
            #expect((state.updateAttempt { $0.hops } != nil) == carries, "route \(name)")
            #expect(carries == state.holdsSlot, "route \(name)")
        }
    }

    @Test func everyPhaseAndInputPairIsAMoveALateInputOrImpossible() {
        for (kind, input) in Self.inputs {
            guard let row = Self.table[kind] else { continue }
            for (name, route) in Self.routes {
                let before = Self.state(route)
                var state = before
                let step = state.step(input)
                let expected: Class = row.moves.contains(name) ? .moves : row.late.contains(name) ? .late : .impossible
                switch step {
                case .moved(let actions):
                    #expect(expected == .moves, "\(name) x \(input): moved, documented \(expected)")
                    checkMove(from: before, to: state, actions, "\(name) x \(input)")
                case .late, .impossible:
                    #expect(expected == (step == .late ? .late : .impossible), "\(name) x \(input): \(step), documented \(expected)")
                    #expect(unchanged(before, state), "\(name) x \(input) changed the state")
                    if step == .late {
                        var viaHandle = before
                        #expect(viaHandle.handle(input) == [], "a late input has no actions")
                    }
                }
            }
        }
    }

    /// The actions of a move fit it: the slot is released exactly when the
    /// move leaves the phases that hold it, a transfer starts exactly when one
    /// is entered, and an end emits its one event.
    private func checkMove(from before: JobState, to after: JobState, _ actions: [JobState.Action], _ what: String) {
        #expect(actions.contains(.releaseSlot) == (before.holdsSlot && !after.holdsSlot), "\(what): releaseSlot")
        #expect(actions.contains(.startTransfer) == (after.phase.kind == .requesting && before.phase.kind != .requesting), "\(what)")
        let aborts = actions.contains { if case .abortTransfer = $0 { true } else { false } }
        #expect(!aborts || before.holdsSlot, "\(what): abort without a transfer")
        let ends = actions.filter {
            switch $0 {
            case .emitFinished, .emitFailed, .emitHandled, .emitSkipped, .emitCancelled: true
            default: false
            }
        }
        #expect(ends.count == (after.isTerminal ? 1 : 0), "\(what): \(ends)")
        #expect(actions.contains(.emitPaused) == (after.phase.kind == .paused && before.phase.kind != .paused), "\(what)")
        // The attempt lives exactly as long as the phases that transfer: a
        // start makes a new one at the request's URL, a move among them keeps
        // it (with the hop it followed), a move out of them ends it.
        let attempt = after.phase.attempt
        #expect((attempt != nil) == after.holdsSlot, "\(what): an attempt outside the phases that transfer")
        if before.holdsSlot, after.holdsSlot {
            #expect(attempt?.currentURL == Self.hop && attempt?.hops == 1, "\(what): the attempt was not carried over")
        } else if after.holdsSlot {
            #expect(attempt?.currentURL == Self.url && attempt?.hops == 0, "\(what): a new attempt starts elsewhere")
        }
    }

    private func unchanged(_ a: JobState, _ b: JobState) -> Bool {
        a == b && a.pendingError == b.pendingError && a.retryingAfter == b.retryingAfter
            && a.phase.attempt?.currentURL == b.phase.attempt?.currentURL && a.phase.attempt?.hops == b.phase.attempt?.hops
    }

    /// A release build counts every impossible input (and logs the first):
    /// a debug build stops at `report` instead, so the count is read here.
    @Test func impossibleInputsAreCounted() {
        let before = ImpossibleTransitions.count
        ImpossibleTransitions.record(input: .heldBodyLinked, phase: .queued)
        ImpossibleTransitions.record(input: .bodyChecked(held: true), phase: .finished)
        #expect(ImpossibleTransitions.count >= before + 2)
    }
}
