/// The engine loop's schedule, besides the `Scheduler`'s slots: the
/// downloads added and not yet touched, the retry timers and host turns
/// that bring downloads back, and the paused ones. Engine thread only.
final class LoopSchedule {
    /// Downloads added and not yet touched: only their request. A `Job` is several
    /// hundred bytes, so 100,000 queued URLs are kept as requests until they start.
    /// Boxed: a table slot is then 8 bytes, not a whole request, and a table sized
    /// for 100,000 entries holds 262,144 slots.
    var waiting: [DownloadID: WaitingRequest] = [:]
    /// Downloads added and not yet touched whose request the registry's store
    /// holds (`AdmittedRequest.stored`): only their number is kept here.
    var waitingStored = NumberSet()
    /// `holdStarts` not yet released: downloads are being added in pieces.
    var startsHeld = 0
    /// Retry timers: (due time, id, the job's retry generation when set).
    var timers = Heap<(Double, DownloadID, Int)>(by: { $0.0 < $1.0 })
    /// Requests waiting for their host's turn: (due time, id, the job's
    /// `requestGeneration` when set).
    var hostTurns = Heap<(Double, DownloadID, Int)>(by: { $0.0 < $1.0 })
    var hostPacing: HostPacing
    /// Paused downloads: open, but waiting for nobody but a `resume`.
    var pausedJobs: Set<DownloadID> = []

    init(hostDelay: Double) {
        hostPacing = HostPacing(delay: hostDelay)
    }
}
