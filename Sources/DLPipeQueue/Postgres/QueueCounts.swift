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
    /// request made yet (docs/design/queue-schema.md).
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
