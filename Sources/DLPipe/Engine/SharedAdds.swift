/// Where the downloads that a shared queue's worker adds go: into the queue
/// every worker claims from (issue 11), not into the local engine. The
/// engine's `add` calls this; the worker hands back what it claims through
/// `DownloadEngine.addClaimed`.
package protocol SharedAdds: Sendable {
    /// Queues `requests` (URLs normalised) and returns their ids in the
    /// queue, in order: a request the queue holds already for this run gets
    /// its id back; 0 for a request the job's `max_downloads` refused (the
    /// run queued that many already). Blocks its thread for the database's answer.
    func add(_ requests: [DownloadRequest]) -> [Int]
    /// `add` for the job's top-level adds: a worker whose run already has
    /// the same top level queued whole gets their ids without sending them.
    func addTopLevel(_ requests: [DownloadRequest]) -> [Int]
    /// Cancels download `number` when it waits in the queue and no worker
    /// holds it, or when this worker holds it outside the engine (ahead, or
    /// claimed and on its way in); `sendIfOpen` cancels it in the engine when
    /// it is open there, and is asked while no claim can enter the engine.
    /// Another worker's download is not touched.
    func cancelQueued(_ number: Int, sendIfOpen: () -> Bool) -> QueuedCancel
    /// Passes a control of download `number` on to the worker that holds
    /// it, when another live worker does; whether it was passed on.
    func forward(_ control: QueueControl, of number: Int) -> Bool
}

/// A control of a download that `DownloadEngine` passes on to the worker
/// of a shared queue that holds it.
package enum QueueControl: String, Sendable, CaseIterable {
    case pause, resume, cancel
}

/// What `SharedAdds.cancelQueued` did.
package enum QueuedCancel: Sendable {
    /// Cancelled where it waited (no engine held it): the caller reports it.
    case cancelled(CancelledInQueue)
    /// Open in the engine: `sendIfOpen` sent the cancel there.
    case sent
    /// Claimed by this worker and on its way to the engine: it ends
    /// cancelled there instead, and the worker reports it.
    case onItsWay
    /// Not this worker's and not waiting: nothing was done.
    case untouched
}

/// A download cancelled while it waited in a shared queue, which no engine
/// held: the one that cancelled it reports it (its `cancelled` line, its
/// count), as an engine reports a queued download it cancels itself.
package struct CancelledInQueue: Sendable {
    /// The queue's URL of it (without credentials).
    package let url: String
    /// Its request's JSON as queued (QueuedRequestCodec): name, folder, meta.
    package let request: String
    /// Attempts made by any worker before it was cancelled.
    package let attempts: Int
}

extension SharedAdds {
    package func addTopLevel(_ requests: [DownloadRequest]) -> [Int] { add(requests) }
}

/// A download a shared queue's worker claimed, for `DownloadEngine.addClaimed`.
package struct ClaimedRequest: Sendable {
    /// Its id in the queue, which becomes its id in this engine.
    package let number: Int
    package let request: DownloadRequest
    /// Attempts made before this claim (by any worker): the retry budget
    /// and the backoff go on from there.
    package let priorAttempts: Int

    package init(number: Int, request: DownloadRequest, priorAttempts: Int = 0) {
        self.number = number
        self.request = request
        self.priorAttempts = max(0, priorAttempts)
    }
}
