import Foundation

/// What `QueueParticipant.cancelQueued` did.
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

    package init(url: String, request: String, attempts: Int) {
        self.url = url
        self.request = request
        self.attempts = attempts
    }

    /// What the engine reports of it (its `cancelled` event) as download `id`.
    func info(id: DownloadID) -> DownloadInfo {
        // As PostgreSQL gives back an empty jsonb object: a request without fields.
        let fields = request == "{}" ? [:]
            : (try? JSONSerialization.jsonObject(with: Data(request.utf8))) as? [String: Any] ?? [:]
        var info = DownloadInfo(
            id: id, url: url, name: fields["name"] as? String, directory: fields["dir"] as? String ?? "",
            path: nil, parent: (fields["parent"] as? NSNumber).map { DownloadID($0.intValue, engine: id.engine) },
            attempt: attempts, meta: fields["meta"] as? [String: String] ?? [:])
        info.metaJSON = fields["meta_json"] as? String
        info.depth = (fields["depth"] as? NSNumber)?.intValue ?? 0
        return info
    }
}
