import DLPipe

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

extension QueueReport {
    package static let nameLimit = 50
}
