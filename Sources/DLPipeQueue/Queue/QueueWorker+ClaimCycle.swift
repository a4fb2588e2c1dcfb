import DLPipe
import Foundation

/// One cycle of the claim loop (`claimLoop`): gather, one statement, act on its answer, wait.
extension QueueWorker {
    /// What one cycle of the claim loop took from `state`: the ends, the
    /// slots to give back and those taken over, the claims held ahead.
    struct ClaimCycle {
        var ends: [ClaimEnd]
        var gives: [Int64: Int64]
        var taking: [Int64: Int64]
        var held: Int
        var transferring: Int
        let unparks: [(id: Int64, token: Int64)]
        let drainWaiting: Bool
        var stranded: [(claim: ClaimedRequest, token: Int64, host: String)] = []
        var yielded: [(claim: ClaimedRequest, token: Int64, host: String)] = []
        var aheadCount = 0
        var slotHosts: Set<String> = []
        var aheadHosts: Set<String> = []
    }

    /// The claims the cycle's statement promoted, claimed and claimed ahead,
    /// and whether a host starves (nil: not asked).
    typealias CycleAnswer = (promoted: Set<Int64>, claims: [ClaimedDownload], ahead: [ClaimedDownload], starve: Bool?)

    /// Takes this cycle's work from `state`; nil once the worker stops.
    func gatherCycle(afterBusyCycle busy: Bool) -> ClaimCycle? {
        // The ends, the slots to give back and those taken over, together
        // (`takeSlots`): a slot handed over is given back and taken in one
        // report, so the host's count never falls below its transfers.
        let (stopping, ends, (gives, taking), held, transferring) = state.withLock { state in
            state.wake = false
            return (state.stopping, state.ends.take(), state.takeSlots(now: QueueClock.now()), state.claims.count, state.transferring)
        }
        // Before the ends: a handler that resumed a parked download ran
        // in a download that is still running, whose end comes later.
        let unparks = state.withLock { $0.takeUnparking() }
        var cycle = ClaimCycle(
            ends: ends, gives: gives, taking: taking, held: held, transferring: transferring, unparks: unparks,
            drainWaiting: drain.isAsked)
        if stopping { return nil }
        if !(cycle.ends.isEmpty && cycle.gives.isEmpty) && cycle.held > 0 && !busy {
            // Ends come in bursts: a moment's wait lets one report (one
            // commit) carry the ends of the transfers finishing together.
            // Not after a busy cycle: ends gathered while it ran.
            usleep(1000)
            state.withLock { state in
                cycle.ends += state.ends.take()
                let (moreGives, moreTaking) = state.takeSlots(now: QueueClock.now())
                cycle.gives.merge(moreGives) { first, _ in first }
                cycle.taking.merge(moreTaking) { first, _ in first }
                cycle.held = state.claims.count
                cycle.transferring = state.transferring
            }
        }
        state.withLock { state in
            // The hosts of the claims held ahead, the stranded ones too:
            // no host waits for a slot that this worker's claims get.
            cycle.aheadHosts = Set(state.ahead.keys)
            // While a host waits with nothing in flight, every claim held
            // ahead goes back (none promoted): the claim below gives the
            // slots to the hosts served least recently.
            let stranded = state.strandedAhead()
            cycle.yielded = state.hostsStarve ? stranded + state.yieldAhead() : []
            cycle.stranded = state.hostsStarve ? [] : stranded
            cycle.aheadCount = state.aheadCount
            cycle.slotHosts = state.slotHosts
        }
        // An end reported now gives its slot back itself.
        for end in cycle.ends {
            cycle.gives[end.id] = nil
            cycle.taking[end.id] = nil
        }
        return cycle
    }

    /// The cycle's statement: report, give back and take slots, claim and
    /// claim ahead, on the claim loop's connection.
    func runCycle(_ cycle: ClaimCycle, room: Int, on connection: PostgresConnection) throws(PostgresError) -> CycleAnswer {
        loopSession.store(connection.serverPID, ordering: .relaxed)
        let reconnected = loopLink.reconnected
        loopLink.reconnected = false
        let writes = !(cycle.ends.isEmpty && cycle.gives.isEmpty && cycle.taking.isEmpty && cycle.stranded.isEmpty
            && cycle.yielded.isEmpty && cycle.unparks.isEmpty) || reconnected
        if !writes && aheadRoom(held: cycle.held, ahead: cycle.aheadCount) == 0 {
            // Nothing to record and nothing to claim ahead: at most
            // a claim, one statement without a transaction around it.
            return ([], room > 0 ? try queue.claim(worker: worker, limit: room, on: connection) : [], [], nil)
        }
        // The slots given back and taken, the report and the next
        // claims commit together: one flush of the database's log.
        return try connection.transaction { () throws(PostgresError) -> CycleAnswer in
            try cycleStatements(cycle, room: room, reconnected: reconnected, on: connection)
        }
    }

    /// `runCycle`'s statements inside its transaction.
    func cycleStatements(
        _ cycle: ClaimCycle, room: Int, reconnected: Bool, on connection: PostgresConnection
    ) throws(PostgresError) -> CycleAnswer {
        let (ends, stranded, yielded) = (cycle.ends, cycle.stranded, cycle.yielded)
        _ = try queue.unpark(cycle.unparks, on: connection)
        try report(ends, freeing: cycle.gives.map { ($0.key, $0.value) }, taking: cycle.taking.map { ($0.key, $0.value) }, on: connection)
        // Claims held ahead that no transfer will hand a slot:
        // a slot from the queue where there is room (they come
        // first, as they were claimed first), else back to ready.
        let promoted = try queue.promoteAhead(
            stranded.prefix(room).map { (Int64($0.claim.number), $0.token) }, on: connection)
        try queue.releaseAhead(
            (stranded.filter { !promoted.contains(Int64($0.claim.number)) } + yielded).map { (Int64($0.claim.number), $0.token) },
            on: connection)
        if reconnected {
            // A claim whose answer the break swallowed is held by
            // nobody that knows it: back to ready. Known are the
            // claims still running here and those whose end was
            // just reported (or is still waiting to be).
            let known = state.withLock { $0.claims.values.map(\.token) + $0.ends.map(\.token) } + ends.map(\.token)
            try queue.releaseUnknownClaims(worker: worker, known: known, on: connection)
        }
        let left = room - promoted.count
        let claims = left > 0 ? try queue.claim(worker: worker, limit: left, on: connection) : []
        let ahead = aheadRoom(held: cycle.held + claims.count, ahead: cycle.aheadCount)
        // Held ahead or to claim ahead: not while a host waits.
        let starve = ahead > 0 || cycle.aheadCount > 0
            ? try queue.hostsStarve(holding: cycle.aheadHosts.subtracting(yielded.map(\.host)).sorted(), on: connection) : nil
        guard ahead > 0, starve != true else { return (promoted, claims, [], starve) }
        // From the hosts where a transfer of this worker will hand a slot over.
        let promotedHosts = stranded.filter { promoted.contains(Int64($0.claim.number)) }.map(\.host)
        let hosts = cycle.slotHosts.union(claims.map(\.host)).union(promotedHosts)
        return (promoted, claims, try queue.claimAhead(worker: worker, hosts: hosts.sorted(), limit: ahead, on: connection), starve)
    }

    /// Acts on the cycle's answer: starts what was claimed and promoted,
    /// holds the claims ahead, and looks at the run when the engine drained.
    /// Whether the loop ends (this worker answered its run's end), and when
    /// the next claimable download comes due.
    func settle(_ cycle: ClaimCycle, _ answer: CycleAnswer, room: Int) throws(PostgresError) -> (ended: Bool, nextDue: Double?) {
        let ends = cycle.ends
        // The queue knows of the holds these ends carried: its claims
        // of their hosts from now on may lift the engine's own.
        if !ends.isEmpty { state.withLock { state in for end in ends { state.unreportedHolds[end.id] = nil } } }
        let (promotedStarted, cancelledReleased) = startPromoted((cycle.stranded + cycle.yielded).map(\.claim), answer.promoted)
        if let starve = answer.starve {
            // A host waits: what this worker holds ahead goes back with the next cycle, now.
            let yieldNow = state.withLock { state -> Bool in
                state.hostsStarve = starve
                return starve && state.aheadCount > 0
            }
            if yieldNow { signal() }
        }
        cancelReleased(cancelledReleased)
        holdAhead(answer.ahead)
        let strandedNow = state.withLock { state -> Bool in
            let live = state.slotHosts
            return state.ahead.keys.contains { !live.contains($0) }
        }
        // Claims held ahead whose host's transfers all ended while
        // the claim ran: the next cycle gives them a slot, now rather
        // than at the next poll.
        if strandedNow { signal() }
        var nextDue: Double?
        if answer.claims.count < room {
            // Room left and nothing more to claim now: a host delay or a
            // retry's time may free one before the next poll.
            nextDue = try loopLink.run(patience: settings.outage) { connection throws(PostgresError) in
                try queue.nextDue(on: connection)
            }
        }
        if settings.follow && !answer.claims.isEmpty && followsEndedRun.withLock({ $0 }) {
            // Work came for a run this worker has not joined yet.
            _ = try followNextRun()
        }
        let claimed = start(answer.claims) + promotedStarted
        if claimed > 0 {
            // The engine was told of them before its drained call is answered.
            answerDrain(nil)
        } else if cycle.drainWaiting, try parkIfAllPaused(), lookIsDue(reported: !ends.isEmpty) {
            if try lookAtRun() { return (true, nextDue) }
        }
        return (false, nextDue)
    }

    /// Waits for the next cycle: at once when something woke the loop while
    /// this one ran (true: a busy cycle), else until a signal, the next due
    /// download or the poll interval.
    func waitForNextCycle(nextDue: Double?) -> Bool {
        let woke = state.withLock { $0.wake }
        // At least 20 ms: a download due now that this claim missed (its
        // host's row was locked by another worker's claim) is tried again
        // soon, without spinning.
        let wait = nextDue.map { min(Self.pollInterval, max(0.02, $0)) } ?? Self.pollInterval
        if woke {
            // The next cycle runs now, and sees what woke it. The
            // signal it left counted must not wake a later wait too:
            // each one left was a cycle run for nothing.
            while wakeSignal.wait(timeout: .now()) == .success {}
        } else {
            _ = wakeSignal.wait(timeout: .now() + wait)
        }
        return woke
    }
}
