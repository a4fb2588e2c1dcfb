/// A participant in a shared queue (docs/scale-out.md,
/// docs/design/queue-worker.md): the worker that feeds an engine the
/// downloads it claims (`DownloadEngine.addClaimed`) and takes the engine's
/// adds into the queue that every worker claims from. It is the whole of
/// what the engine knows of the queue; the queue itself (PostgreSQL, the
/// claim loop, leases) is the DLPipeQueue module's.
///
/// An engine with one (`EngineConfiguration.queue`) tells it of its
/// downloads' turns on its own thread (`mayStart` to `hostHeld`), quickly
/// and without blocking; `add` to `forward` come from the engine's callers
/// and may block for the database. An engine on its own has `NoQueue`.
package protocol QueueParticipant: Sendable {
    /// Where this worker's part files go (one folder per job, one name per
    /// worker and file).
    var files: ClaimedFiles { get }

    /// Whether the worker's lease still holds with a margin, by its own
    /// monotonic clock since the database acknowledged its last heartbeat:
    /// a whole file is placed (renamed, linked) only then.
    func mayPlace() -> Bool
    /// Whether a request may start now: the same rule as `mayPlace` (issue
    /// #36). A worker frozen past its lease (SIGSTOP, a suspended machine)
    /// and woken holds claims that the other workers took back, and its
    /// transfers that ended in the freeze handed their slots to its claims
    /// held ahead at once, before its heartbeat could tell it the lease was
    /// gone: 3 to 4 requests of downloads another worker fetched. Asked on
    /// the engine thread before each request (a hop of a redirect too); a
    /// request refused waits in its slot and asks again
    /// (`EngineLoop.waitsForLease`).
    func mayStart() -> Bool
    /// Takes download `number`, whose attempt failed (`error`) and that is
    /// due another after `delay` seconds, or that goes back without a
    /// failure (`error` nil: one resumed after its transfer ended, whose
    /// host slot went back): the queue schedules it, and any worker may take
    /// it then. The engine has forgotten it, as if it had ended, without a
    /// terminal event. `request` and `attempts` (made so far, by any worker)
    /// let a cancel that comes before the queue took it end it cancelled.
    func handBack(_ number: Int, after delay: Double, _ error: DownloadError?, request: DownloadRequest, attempts: Int)
    /// Download `number`'s transfer ended (its body is checked and waits for
    /// placement, or the transfer stopped): the queue's host slot it holds
    /// may go to another transfer. Called once per download; a later
    /// transfer of it goes back through `handBack`.
    func transferEnded(_ number: Int)
    /// Download `number` was paused (true), or resumed in this engine
    /// (false; one resumed after its transfer ended goes through `handBack`).
    /// Before the `paused` event: the queue must know that a paused download
    /// is no work of the run's, or a run whose last download a handler
    /// paused would never end.
    func pauseChanged(_ number: Int, paused: Bool)
    /// Download `number` got a 429 or 503 with Retry-After: this engine holds
    /// `host` back for `seconds` from now. At the answer: the queue learns
    /// of the hold only with the download's report, later (after a
    /// `retrying` handler, say), and a claim of that host the queue hands out
    /// before then must not lift this engine's hold.
    func hostHeld(_ number: Int, host: String, seconds: Double)

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
    /// The shared run this worker works for now (robots.txt is fetched once
    /// a run for every worker); nil for an engine on its own.
    var runNumber: Int64? { get }
}

extension QueueParticipant {
    package func addTopLevel(_ requests: [DownloadRequest]) -> [Int] { add(requests) }
    /// The shared run this worker works for now; nil without one.
    package var runNumber: Int64? { nil }
}

/// The participant of an engine on its own: every file may be placed and
/// every request start, and nothing is told. The engine never hands a
/// download back to it nor sends it adds and controls (`isShared` is false).
struct NoQueue: QueueParticipant {
    var files: ClaimedFiles { ClaimedFiles(folder: "", worker: 0) }
    func mayPlace() -> Bool { true }
    func mayStart() -> Bool { true }
    func handBack(_ number: Int, after delay: Double, _ error: DownloadError?, request: DownloadRequest, attempts: Int) {
        assertionFailure("an engine on its own retries its downloads itself")
    }
    func transferEnded(_ number: Int) {}
    func pauseChanged(_ number: Int, paused: Bool) {}
    func hostHeld(_ number: Int, host: String, seconds: Double) {}
    func add(_ requests: [DownloadRequest]) -> [Int] { [] }
    func cancelQueued(_ number: Int, sendIfOpen: () -> Bool) -> QueuedCancel { .untouched }
    func forward(_ control: QueueControl, of number: Int) -> Bool { false }
}
