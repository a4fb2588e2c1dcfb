/// What a shared queue's participant changes in its engine from its own
/// threads: a claim made its hosts due, the job's `per_host` changed, a
/// download ended cancelled before the engine held it. The engine's inbox
/// carries any of them in one command (`EngineLoop.Command.participant`),
/// which knows nothing of the queue; on the engine thread the update applies
/// itself to the narrow side of the engine a participant may change
/// (`QueueUpdateTarget`). The participant's entry points on
/// `DownloadEngine` (`addClaimed`, `setPerHost`, `reportCancelledInQueue`)
/// post them.
package protocol QueueUpdate: Sendable {
    /// Carries the update out (engine thread).
    func apply(to engine: any QueueUpdateTarget)
}

/// What a queue's update may change in the engine (engine thread only).
package protocol QueueUpdateTarget: AnyObject {
    /// The hosts of these URLs are due by the queue's clock: a Retry-After
    /// hold of this engine's own ends (`HostPacing.liftHold`).
    func hostsDueByQueue(_ urls: [String])
    /// Transfers per host are capped at `limit` from now on.
    func setPerHost(_ limit: Int)
    /// A download this engine never held ended cancelled in the queue:
    /// counted and reported as a cancel of a download waiting here is.
    func countCancelledInQueue(_ info: DownloadInfo)
}

/// Claims for these URLs came: their hosts are due.
struct HostsDueByQueue: QueueUpdate {
    let urls: [String]
    func apply(to engine: any QueueUpdateTarget) { engine.hostsDueByQueue(urls) }
}

/// The job-wide `per_host` a claim read.
struct PerHostByQueue: QueueUpdate {
    let limit: Int
    func apply(to engine: any QueueUpdateTarget) { engine.setPerHost(limit) }
}

/// A download cancelled in the queue before this engine held it.
struct CancelledByQueue: QueueUpdate {
    let info: DownloadInfo
    func apply(to engine: any QueueUpdateTarget) { engine.countCancelledInQueue(info) }
}

extension EngineLoop: QueueUpdateTarget {
    func setPerHost(_ limit: Int) { scheduler.setPerHost(limit) }

    func countCancelledInQueue(_ info: DownloadInfo) {
        ledger.summary.cancelled += 1
        emit(.cancelled(info))
    }
}
