/// What the schedule knows of one download between its turns: whether its
/// host's turn is taken for the request about to start, which retry timer
/// is the live one, and whether a shared queue's host slot went back.
struct JobTurns {
    /// The host's turn (HostPacing), or the lease's wait, is taken for the
    /// request about to start: it is not taken twice.
    private(set) var paced = false
    /// Counts retry timers set, so a stale timer is recognised.
    private(set) var retryGeneration = 0
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

    /// The shared queue's host slot went back when the transfer ended.
    mutating func slotWentBack() { slotGivenBack = true }
}
