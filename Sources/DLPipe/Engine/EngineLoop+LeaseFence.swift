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
        guard let mayStart = configuration.claims?.mayStart, !mayStart() else { return false }
        job.paced = true
        hostTurns.push((EngineLoop.now() + Self.leaseCheckInterval, job.id, job.requestGeneration))
        return true
    }
}
