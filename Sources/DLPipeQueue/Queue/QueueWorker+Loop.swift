import DLPipe
import Foundation

/// The claim loop: report what ended, claim while there is room, and when the
/// local engine drained with nothing to claim, see whether the job's run is over.
extension QueueWorker {
    /// Seconds between two looks at the queue when nothing wakes the loop: the
    /// fallback of LISTEN, and the clock of retries and host delays.
    /// `DLPIPE_QUEUE_POLL_SECONDS` sets it for tests that must tell a wake-up
    /// by NOTIFY from one by the poll (0.05 to 600 s; anything else is ignored).
    static let pollInterval: Double = {
        guard let text = ProcessInfo.processInfo.environment["DLPIPE_QUEUE_POLL_SECONDS"], let seconds = Double(text),
            (0.05...600).contains(seconds)
        else { return 1.0 }
        return seconds
    }()

    /// Claims a worker holds at most that are not transferring: those whose
    /// transfer ended and whose files wait for their batch to be placed and
    /// reported, and those held ahead. They hold no host slot, and those
    /// that wait to be placed are no one else's work any more: the bound
    /// only keeps memory small. With small files a file waits 20 to 30 ms
    /// (its batch's age and sync, its state's commit, the next report),
    /// 100 files and more at 4,000 a second: at 4 x -j, then 8 x, the bound
    /// stopped the claims, not the slots.
    /// At 16 x a per-cycle trace still showed it reached at every batch:
    /// the claims ahead ran out, every transfer ended, and the idle engine
    /// started a batch at once for its last few files (about 205 batches of
    /// 49 files for 10,000, each a state write and a syncfs, against the
    /// SQLite run's 27). At 64 x, with 12 x ahead (either alone changed
    /// nothing), 53 to 90 batches and half the state writes; two A/B runs of
    /// the bench's set 8 gave one worker 8 and 10 % less wall and 6 and 13 %
    /// less CPU. Memory stays bounded: a
    /// waiting claim is its request, and bodies held in memory have their
    /// own bound (`EngineLoop.maxHeldBytes`; peak RSS 65 MB against 50 MB).
    var waitingLimit: Int { 64 * settings.concurrency }

    /// Claims to ask for now: while fewer than the concurrency transfer (a
    /// claim holds its host slot until its transfer ends, so the job-wide
    /// per_host counts transfers), and the held ones stay within the bound.
    func room(held: Int, transferring: Int) -> Int {
        max(0, min(settings.concurrency - transferring, settings.concurrency + waitingLimit - held))
    }

    /// Claims held ahead at most: enough for the transfers that end while
    /// one cycle of the claim loop runs (about 7 ms). Small files turn a
    /// slot over several times in a cycle: at 2 x -j the slots sat idle a
    /// third of the time waiting for the next claims (10 of 16 transferring
    /// on average); at 6 x -j, 12 to 13, and 15 once the claims ahead also
    /// take over slots on their way back (`startOnFreeSlots`). 12 x, with
    /// the larger `waitingLimit`: the stock outlasts a cycle that waits for
    /// a batch's report, so the transfers do not all end at once.
    /// A claim ahead is only taken from a host with twice as many rows
    /// ready, so a small job stays shared.
    var aheadLimit: Int { 12 * settings.concurrency }

    /// Claims to ask for ahead now: up to `aheadLimit` held ahead, within
    /// the bound on held claims; none for fewer than half of that (a
    /// statement for a few is not worth its cost: the slots handed over
    /// wait for no claim while some are held).
    func aheadRoom(held: Int, ahead: Int) -> Int {
        let room = min(aheadLimit - ahead, settings.concurrency + waitingLimit - held)
        return room >= max(1, settings.concurrency / 2) ? room : 0
    }

    func claimLoop() {
        // Whether something came while the last cycle ran (see `gatherCycle`).
        var busy = false
        while true {
            guard let cycle = gatherCycle(afterBusyCycle: busy) else { return }
            // When the next claimable download comes due, if sooner than the poll.
            var nextDue: Double?
            do {
                let room = room(held: cycle.held, transferring: cycle.transferring)
                let answer = try loopLink.run(patience: settings.outage) { connection throws(PostgresError) -> CycleAnswer in
                    try runCycle(cycle, room: room, on: connection)
                }
                let ended: Bool
                (ended, nextDue) = try settle(cycle, answer, room: room)
                if ended { return }
            } catch {
                fatal(error.isConnectionLoss
                    ? outageMessage(away: error.triedFor ?? settings.outage, error)
                    : "the shared queue refused a statement: \(error.description)", givingBack: !error.isConnectionLoss)
                return
            }
            busy = waitForNextCycle(nextDue: nextDue)
        }
    }

    /// Reports ends under their tokens and adds the accepted ones to the run's
    /// counts, in one statement. A late end (the claim was taken back
    /// meanwhile) changes nothing.
    /// The host slots of `freeing` (transfers that ended, their files still
    /// to place) go back in the same statement.
    func report(
        _ ends: [ClaimEnd], freeing: [(id: Int64, token: Int64)] = [], taking: [(id: Int64, token: Int64)] = [],
        on connection: PostgresConnection
    ) throws(PostgresError) {
        guard !ends.isEmpty || !freeing.isEmpty || !taking.isEmpty else { return }
        _ = try queue.report(
            ends.map {
                ClaimReport(
                    id: $0.id, token: $0.token, outcome: $0.outcome, error: $0.error, unchanged: $0.unchanged, bytes: $0.bytes,
                    holdHost: $0.holdHost)
            }, freeing: freeing, taking: taking, run: run, worker: worker, on: connection)
    }

    /// Starts claimed downloads in the engine; how many.
    func start(_ claims: [ClaimedDownload]) -> Int {
        guard let engine = engineBox.withLock({ $0 }) else { return 0 }
        followPerHost(of: claims, engine: engine)
        let decoded = decode(claims, for: engine)
        let (started, cancelled) = admission.withLock { onTheirWay in
            let (kept, cancelled) = holdClaims(decoded, claims, ahead: false, onTheirWay: &onTheirWay)
            if !kept.isEmpty { engine.addClaimed(kept, keepingHoldsOf: state.withLock { $0.unreportedHeldHosts(at: QueueClock.now()) }) }
            return (kept.count, cancelled)
        }
        reportCancelled(cancelled, to: engine)
        return started
    }

    /// Starts the stranded claims the queue gave a slot; the others went
    /// back to ready and are no longer this worker's. Also returns those of
    /// the others that a cancel reached on their way back (`cancelReleased`).
    func startPromoted(_ stranded: [ClaimedRequest], _ promoted: Set<Int64>) -> (started: Int, cancelledReleased: [Int64]) {
        guard !stranded.isEmpty else { return (0, []) }
        let engine = engineBox.withLock { $0 }
        let (started, cancelled, cancelledReleased) = admission.withLock { onTheirWay in
            let (started, cancelled, cancelledReleased) = state.withLock { state in
                var (started, cancelled, cancelledReleased) = ([ClaimedRequest](), [ClaimedRequest](), [Int64]())
                for claim in stranded {
                    let id = Int64(claim.number)
                    let cancel = onTheirWay.remove(id) != nil
                    if promoted.contains(id) {
                        state.promoted(id)
                        if cancel {
                            state.endCancelled(id)
                            cancelled.append(claim)
                        } else {
                            started.append(claim)
                        }
                    } else {
                        state.released(id)
                        if cancel { cancelledReleased.append(id) }
                    }
                }
                return (started, cancelled, cancelledReleased)
            }
            if !started.isEmpty {
                engine?.addClaimed(started, keepingHoldsOf: state.withLock { $0.unreportedHeldHosts(at: QueueClock.now()) })
            }
            return (started, cancelled, cancelledReleased)
        }
        guard let engine else { return (0, cancelledReleased) }
        reportCancelled(cancelled, to: engine)
        return (started.count, cancelledReleased)
    }

    /// Keeps claims made ahead until a transfer of their host hands them its slot.
    func holdAhead(_ claims: [ClaimedDownload]) {
        guard let engine = engineBox.withLock({ $0 }) else { return }
        let decoded = decode(claims, for: engine)
        let cancelled = admission.withLock { onTheirWay in
            let (_, cancelled) = holdClaims(decoded, claims, ahead: true, onTheirWay: &onTheirWay)
            // Transfers that ended while the claim ran, with nobody held ahead
            // to take their slots over: the new claims take them now, as at a
            // hand-over, instead of waiting a cycle for the queue to give them one.
            let started = state.withLock { $0.startOnFreeSlots() }
            if !started.isEmpty { engine.addClaimed(started, liftingHolds: false) }
            return cancelled
        }
        reportCancelled(cancelled, to: engine)
    }

    /// Claims decoded into the engine's requests (one that cannot be read
    /// fails at once, with the next report), their records read ahead: no
    /// lock is held, as the read-ahead may wait for the database.
    private func decode(_ claims: [ClaimedDownload], for engine: DownloadEngine) -> [ClaimedRequest] {
        guard !claims.isEmpty else { return [] }
        var decoded: [ClaimedRequest] = []
        var unreadable: [ClaimEnd] = []
        for claim in claims {
            guard var request = QueuedRequestCodec.decode(claim, engine: 0) else {
                unreadable.append(ClaimEnd(
                    id: claim.id, token: claim.token, outcome: .failed,
                    error: "io: the queued request cannot be read", unchanged: false, bytes: 0))
                continue
            }
            // The parent's id is the queue's, as every id a worker's engine uses.
            request.parent = request.parent.flatMap { engine.downloadID(number: $0.rawValue) }
            // The queue counts this claim as an attempt already.
            decoded.append(ClaimedRequest(number: Int(claim.id), request: request, priorAttempts: claim.attempts - 1))
        }
        // Their records in one statement, not one lookup each when they start.
        readAhead?.prime(keys: decoded.map(\.request.deduplicationKey))
        if !unreadable.isEmpty { state.withLock { $0.ends.append(contentsOf: unreadable) } }
        return decoded
    }

    /// Makes decoded claims this worker's, under their tokens (`claims`, the
    /// rows they came from): `ahead` ones wait in `State.ahead` without a
    /// slot. Under `admission`: those a cancel reached on their way in
    /// (`onTheirWay`) end cancelled instead. Returns the others and those.
    private func holdClaims(
        _ decoded: [ClaimedRequest], _ claims: [ClaimedDownload], ahead: Bool, onTheirWay: inout Set<Int64>
    ) -> (kept: [ClaimedRequest], cancelled: [ClaimedRequest]) {
        guard !decoded.isEmpty else { return ([], []) }
        let rows = Dictionary(claims.map { ($0.id, $0) }) { first, _ in first }
        var kept: [ClaimedRequest] = []
        var cancelled: [ClaimedRequest] = []
        state.withLock { state in
            for item in decoded {
                let id = Int64(item.number)
                guard let row = rows[id] else { continue }
                if onTheirWay.remove(id) != nil {
                    // Never in the engine: no request is made. A slot its
                    // row took goes back with its end (`letGo`).
                    state.hold(id, token: row.token, host: row.host, phase: ahead ? .ahead : .inEngine(taking: false))
                    state.endCancelled(id)
                    cancelled.append(item)
                    continue
                }
                state.hold(id, token: row.token, host: row.host, phase: ahead ? .ahead : .inEngine(taking: false), row: row)
                if ahead {
                    state.ahead[row.host, default: FirstInLine()].append(item)
                    state.aheadCount += 1
                }
                kept.append(item)
            }
        }
        return (kept, cancelled)
    }
}

extension QueueWorker {
    /// The job's `per_host` as these claims read it becomes the engine's
    /// cap, before they start. A worker's engine had kept the value it
    /// started with: after a later worker raised the job's, it claimed
    /// slots at the new value and ran its transfers at the old one (one
    /// at a time while the queue showed three of its slots taken, and the
    /// other workers got none of them).
    func followPerHost(of claims: [ClaimedDownload], engine: DownloadEngine) {
        guard let limit = claims.lazy.compactMap(\.perHost).first else { return }
        let changed = state.withLock { state -> Bool in
            defer { state.enginePerHost = limit }
            return state.enginePerHost != limit
        }
        if changed { engine.setPerHost(limit) }
    }
}

/// A run that a `--follow` worker was in ended.
package struct FollowedRunEnd: Sendable {
    package let run: Int64
    /// The run's exit code, the same for every worker.
    package let exitCode: Int
    /// The job-wide counts `done` got, when this worker ran it.
    package let job: RunSummary?
}
