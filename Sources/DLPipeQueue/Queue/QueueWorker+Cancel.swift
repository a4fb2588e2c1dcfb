import DLPipe
import Synchronization

/// `dl.cancel` (or `DownloadEngine.cancel`) of a shared queue's download
/// that the engine does not hold.
///
/// Such a download waits in the queue (cancelled there, in one statement),
/// is another worker's (left alone), or is this worker's outside the engine:
/// held ahead (`State.cancelAhead`), or claimed and on its way in. The last
/// is common, not rare: a handler's `dl.add` wakes this worker's claim loop,
/// which may claim the new row before the handler's `dl.cancel` of it comes
/// (22 of 60 such cancels were lost before this: the downloads ran). A claim
/// enters the engine or the claims ahead only under `admission`, and the
/// cancel's check runs under it too, so a cancel either finds the claim
/// where it is or leaves its id where the claim will find it on its way in.
extension QueueWorker {
    package func cancelQueued(_ number: Int, sendIfOpen: () -> Bool) -> QueuedCancel {
        let id = Int64(number)
        let (found, mayBeOnItsWay) = admission.withLock { onTheirWay -> (QueuedCancel?, Bool) in
            let (cancelled, ending) = state.withLock { state in
                // An end waiting for its report is on its way out, not in; a
                // retry handed back ends cancelled instead of going back.
                (state.cancelAhead(id) ?? state.cancelHandedBack(id), state.ends.contains { $0.id == id })
            }
            if let cancelled { return (.cancelled(cancelled), false) }
            if sendIfOpen() { return (.sent, false) }
            if !ending { onTheirWay.insert(id) }
            return (nil, !ending)
        }
        if let found {
            // Its end goes out with the next report.
            if case .cancelled = found { signal() }
            return found
        }
        let answer = try? addLink.withLock { link throws(PostgresError) in
            try link.run(patience: settings.outage) { connection throws(PostgresError) in
                try queue.cancelQueued(id, run: run, worker: worker, on: connection)
            }
        }
        // Claimed by this worker and not in the engine yet: it ends where it
        // enters (`holdClaims`, `startPromoted`), which reports it.
        if mayBeOnItsWay, answer?.heldBy == true { return .onItsWay }
        let consumed = mayBeOnItsWay && admission.withLock { $0.remove(id) == nil }
        // Taken meanwhile by its claim on its way in (and reported, so no
        // longer running): it ended cancelled there.
        if consumed { return .onItsWay }
        return answer?.cancelled.map(QueuedCancel.cancelled) ?? .untouched
    }

    /// What the `cancelled` event of a claim cancelled on its way in says.
    static func cancelledOnItsWay(_ claim: ClaimedRequest) -> CancelledInQueue {
        let row = QueuedRequestCodec.encode(claim.request)
        // The claim counted an attempt that made no request.
        return CancelledInQueue(url: row.url, request: row.request, attempts: claim.priorAttempts)
    }

    /// Reports claims that ended cancelled on their way in: their events
    /// now, their ends with the next report.
    func reportCancelled(_ claims: [ClaimedRequest], to engine: DownloadEngine) {
        guard !claims.isEmpty else { return }
        for claim in claims {
            engine.reportCancelledInQueue(Self.cancelledOnItsWay(claim), number: claim.number)
        }
        signal()
    }

    /// Cancels in the queue the claims cancelled on their way in that the
    /// queue took back meanwhile (stranded ahead, released): they wait there
    /// now. On the claim loop's thread and connection.
    func cancelReleased(_ ids: [Int64]) {
        guard !ids.isEmpty, let engine = engineBox.withLock({ $0 }) else { return }
        for id in ids {
            let answer = try? loopLink.run(patience: settings.outage) { connection throws(PostgresError) in
                try queue.cancelQueued(id, run: run, worker: worker, on: connection)
            }
            if let cancelled = answer?.cancelled { engine.reportCancelledInQueue(cancelled, number: Int(id)) }
        }
    }
}

extension QueueWorker.State {
    /// Takes claim `id` out of those held ahead, to end cancelled (its
    /// report counts it); nil when it is not held ahead.
    mutating func cancelAhead(_ id: Int64) -> CancelledInQueue? {
        let isThis = { (claim: ClaimedRequest) in Int64(claim.number) == id }
        guard let life = claims[id], life.phase == .ahead, let row = life.row else { return nil }
        let host = life.host
        _ = ahead[host]?.remove(firstWhere: isThis)
        if ahead[host]?.isEmpty == true { ahead[host] = nil }
        aheadCount -= 1
        endCancelled(id)
        // This claim made no attempt of its own.
        return CancelledInQueue(url: row.url, request: row.request, attempts: max(0, row.attempts - 1))
    }

    /// Turns the unreported end of a download handed back to the queue (a
    /// retry) into a cancelled one; nil when there is none. Its row was
    /// still this worker's, so the queue's cancel did not touch it, and the
    /// report then made it ready: the cancel was lost and the retry ran.
    mutating func cancelHandedBack(_ id: Int64) -> CancelledInQueue? {
        guard let index = ends.firstIndex(where: { $0.id == id }), case .retry = ends[index].outcome,
            let (request, attempts) = ends[index].handedBack
        else { return nil }
        ends[index].outcome = .cancelled
        ends[index].error = nil
        ends[index].handedBack = nil
        let row = QueuedRequestCodec.encode(request)
        return CancelledInQueue(url: row.url, request: row.request, attempts: attempts)
    }

    /// A held claim that a cancel reached outside the engine ends cancelled
    /// under its token; its report counts it and gives back a slot its row holds.
    mutating func endCancelled(_ id: Int64) {
        guard let token = letGo(id)?.token else { return }
        ends.append(ClaimEnd(id: id, token: token, outcome: .cancelled, error: nil, unchanged: false, bytes: 0))
    }
}
