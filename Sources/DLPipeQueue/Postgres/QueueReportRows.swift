import DLPipe

/// A worker not stopped: alive, or dead with its lease expired.
package struct QueueWorkerStatus: Sendable, Equatable {
    package let id: Int64
    package let hostname: String
    package let pid: Int64
    package let startedAgo: Double
    package let heartbeatAgo: Double
    /// Seconds until the lease runs out; negative once it has.
    package let leaseLeft: Double
    /// `lease_until` passed (the test that taking back uses): the worker is
    /// dead and its claims go back to ready when another worker polls.
    package let leaseExpired: Bool
    /// Downloads it holds (claimed, not paused), and of them: those with a
    /// host slot (transferring) and those held ahead (no request yet); the
    /// rest are being placed.
    package let running: Int64
    package let transferring: Int64
    package let heldAhead: Int64

    package var placing: Int64 { max(0, running - transferring - heldAhead) }
}

/// A host with transfers in flight, across every worker.
package struct QueueHostStatus: Sendable, Equatable {
    package let host: String
    /// The job-wide counter that claims raise and reports lower.
    package let inFlight: Int64
    /// Its downloads waiting in line (ready or scheduled).
    package let waiting: Int64
}

/// A failed download, with what it last failed of.
package struct QueueFailure: Sendable, Equatable {
    /// The URL without credentials (the queue keeps them apart).
    package let url: String
    package let lastError: String?
    package let attempts: Int64
    /// How long ago it failed; nil when the row has no end time.
    package let endedAgo: Double?
}

/// A run of the job, newest first.
package struct QueueRunStatus: Sendable, Equatable {
    package let id: Int64
    package let startedAgo: Double
    /// nil while the run is open.
    package let endedAgo: Double?
    /// Since when nothing was ready, running or scheduled (an open run ends
    /// after the settle time); nil when work is going on or the run ended.
    package let idleAgo: Double?
    /// The job-wide exit code every worker exits with, once known.
    package let exitCode: Int64?
    package let finished: Int64
    package let unchanged: Int64
    package let failed: Int64
    package let handled: Int64
    /// The worker that ran `done`, once one took it.
    package let doneWorker: Int64?
}
