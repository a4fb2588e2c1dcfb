import DLPipe

/// The jobs a queue holds, by name.
package struct QueueJobList: Sendable, Equatable {
    package let schemaVersion: Int
    package let jobs: [QueueJobSummary]
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
    /// Seconds since `dlpipe queue pause` paused the job; nil while it is not.
    package var pausedAgo: Double? = nil
}
