import DLPipe

/// The figures `dlpipe status --queue` shows, as `QueueReport` reads them.
/// Every time is an age or a span measured by the database (`now()`), never
/// a timestamp to compare with this machine's clock: the workers' machines
/// and the one asking may disagree about the time, the database does not
/// disagree with itself.

/// How a job's downloads stand, by status. `ready` and `scheduled` split the
/// rows waiting in line: ready ones may be claimed now, scheduled ones once
/// their `run_at` comes (a retry's backoff, a Retry-After, a delay).
package struct QueueCounts: Sendable, Equatable {
    package var ready: Int64 = 0
    package var scheduled: Int64 = 0
    /// Claimed by a worker: `transferring`, `heldAhead` and `placing`.
    package var running: Int64 = 0
    /// Of `running`: claims that hold a host slot, transferring (or waiting
    /// in their worker's engine for their transfer to start).
    package var transferring: Int64 = 0
    /// Of `running`: claims a worker holds ahead of its transfers, no
    /// request made yet (docs/scale-out.md, "Claims ahead").
    package var heldAhead: Int64 = 0
    package var paused: Int64 = 0
    package var finished: Int64 = 0
    package var skipped: Int64 = 0
    package var failed: Int64 = 0
    package var handled: Int64 = 0
    package var cancelled: Int64 = 0

    package init() {}

    /// Of `running`: claims whose transfer ended, their file being placed
    /// (or waiting for its worker's lease to be sure).
    package var placing: Int64 { max(0, running - transferring - heldAhead) }

    /// Every count with its JSON key, in the order they are shown: `running`
    /// and the three it is made of.
    package var named: [(name: String, count: Int64)] {
        [("ready", ready), ("scheduled", scheduled), ("running", running), ("transferring", transferring),
         ("held_ahead", heldAhead), ("placing", placing), ("paused", paused),
         ("finished", finished), ("skipped", skipped), ("failed", failed), ("handled", handled),
         ("cancelled", cancelled)]
    }

    /// The counts as the text says them: `running` told as what its claims
    /// do (a worker holds up to 12 x -j claims ahead of its transfers: "107
    /// running" was 8 transfers and 99 claims waiting for a slot).
    package var shown: [(name: String, count: Int64)] {
        [("ready", ready), ("scheduled", scheduled), ("transferring", transferring), ("held ahead", heldAhead),
         ("placing", placing), ("paused", paused), ("finished", finished), ("skipped", skipped),
         ("failed", failed), ("handled", handled), ("cancelled", cancelled)]
    }
}

/// One job of the queue (one `--name`), as the job list shows it.
package struct QueueJobSummary: Sendable, Equatable {
    package let id: Int64
    package let name: String
    package let counts: QueueCounts
    /// Workers not stopped whose lease still runs.
    package let workersAlive: Int64
    /// Workers not stopped whose lease ran out: dead, their claims not yet
    /// taken back (the next worker that polls does it).
    package let workersExpired: Int64
}

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

/// All the queue has to say about one job.
package struct QueueReport: Sendable, Equatable {
    /// The database's schema version (older than this build is read as it is).
    package let schemaVersion: Int
    package let job: QueueJobSummary
    /// The job-wide limits in the job's row.
    package let perHost: Int64
    package let hostDelay: Double
    package let maxDownloads: Int64?
    /// Workers not stopped, oldest first.
    package let workers: [QueueWorkerStatus]
    /// Hosts with transfers in flight, most first, at most `hostLimit`.
    package let hosts: [QueueHostStatus]
    /// How many hosts have transfers in flight, and how many transfers: the
    /// totals when `hosts` was cut short.
    package let hostsInFlight: Int64
    package let inFlight: Int64
    /// The most recent failures, at most `failureLimit`; `job.counts.failed`
    /// is how many there are (a job can have a million).
    package let failures: [QueueFailure]
    /// The last runs, newest first, at most `runLimit`.
    package let runs: [QueueRunStatus]

    package static let failureLimit = 20
    package static let hostLimit = 20
    package static let runLimit = 5
}

/// The jobs a queue holds, by name.
package struct QueueJobList: Sendable, Equatable {
    package let schemaVersion: Int
    package let jobs: [QueueJobSummary]
}

/// What reading the queue found: the figures, or why there are none.
package enum QueueReading<Figures: Sendable & Equatable>: Sendable, Equatable {
    case found(Figures)
    /// The database holds no dlpipe queue (no worker ever started with it).
    case noQueue
    /// No job has that name; the names that do exist, sorted (at most
    /// `QueueReport.nameLimit`), and how many there are.
    case unknownJob(names: [String], count: Int)
}

extension QueueReport {
    package static let nameLimit = 50
}
