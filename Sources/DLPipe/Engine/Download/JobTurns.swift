/// What the schedule knows of one download between its turns: whether its
/// host's turn is taken for the request about to start, which retry timer
/// is the live one, which `request` hook call or host turn is the live one,
/// and whether a shared queue's host slot went back.
struct JobTurns {
    /// The host's turn (HostPacing), or the lease's wait, is taken for the
    /// request about to start: it is not taken twice.
    private(set) var paced = false
    /// Counts retry timers set, so a stale timer is recognised.
    private(set) var retryGeneration = 0
    /// Counts `request` hook calls and stopped attempts, so a hook's reply or
    /// a host's turn that a pause, a cancel or a newer call overtook is
    /// recognised and dropped. Kept across attempts.
    private(set) var requestGeneration = 0
    /// A shared queue's download whose transfer ended and whose host slot
    /// went back to the queue (`QueueParticipant.transferEnded`): another
    /// transfer of it needs a new claim.
    private(set) var slotGivenBack = false

    /// The request waits for its host's turn (or the lease), already taken.
    mutating func waitForTurn() { paced = true }

    /// The turn is used (the request starts) or void (the attempt stopped,
    /// the host is held back): the next request takes a new one.
    mutating func turnEnded() { paced = false }

    /// A retry timer is set: its generation, which it must bring back.
    mutating func retryTimerSet() -> Int {
        retryGeneration += 1
        return retryGeneration
    }

    /// A `request` hook call for the next hop: its generation, which its reply must bring back.
    mutating func askRequestHook() -> Int {
        requestGeneration += 1
        return requestGeneration
    }

    /// The attempt stopped: a `request` hook's reply or a host's turn still
    /// to come is for a hop that no longer starts.
    mutating func requestVoided() { requestGeneration += 1 }

    /// The shared queue's host slot went back when the transfer ended.
    mutating func slotWentBack() { slotGivenBack = true }
}
