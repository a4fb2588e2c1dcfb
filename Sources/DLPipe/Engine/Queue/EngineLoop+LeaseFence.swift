/// A shared queue's fence at the start of a request (issue #36): a worker
/// whose lease is not sure (frozen past it, cut off from the database) may
/// hold claims the other workers took back, so it requests nothing until its
/// next acknowledged heartbeat; what it placed waits the same way
/// (`EngineLoop+Placement`).
extension EngineLoop {
    /// How often a request held back by the fence asks again.
    static let leaseCheckInterval = 0.25

    /// Whether the job's request must wait for the lease: it keeps its slot
    /// and comes back as a host turn (`hostTurnCame`), so a pause, a cancel
    /// or a failure meanwhile (a new `requestGeneration`) drops the wait,
    /// and its host turn, already taken, is not taken twice.
    func waitsForLease(_ job: Job) -> Bool {
        guard !queue.mayStart() else { return false }
        job.turns.waitForTurn()
        schedule.hostTurns.push((EngineLoop.now() + Self.leaseCheckInterval, job.id, job.requestGeneration))
        return true
    }
}

extension EngineLoop {
    /// The shared queue this engine runs for, or `NoQueue` on its own: where
    /// its downloads' turns are told, and whether a file may be placed.
    var queue: any QueueParticipant { configuration.queue ?? NoQueue() }

    /// Whether this engine is a shared queue's worker: the queue then holds
    /// its retries and host slots, and every key is asked of the state.
    var isShared: Bool { configuration.queue != nil }
}
