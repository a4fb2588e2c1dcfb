import DLPipe

/// What reading the queue found: the figures, or why there are none.
package enum QueueReading<Figures: Sendable & Equatable>: Sendable, Equatable {
    case found(Figures)
    /// The database holds no dlpipe queue (no worker ever started with it).
    case noQueue
    /// No job has that name; the names that do exist, sorted (at most
    /// `QueueReport.nameLimit`), and how many there are.
    case unknownJob(names: [String], count: Int)
}
