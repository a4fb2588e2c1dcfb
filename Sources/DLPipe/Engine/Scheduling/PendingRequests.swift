import Synchronization

/// Where the requests of queued downloads wait until they start, and the
/// deduplication keys of the requests they hold, so that a repeat is found.
///
/// An engine keeps its first `DownloadRegistry.inMemoryLimit` requests in
/// memory, as before; past that, it stores the requests that `storable`
/// allows here and reads each back when its download starts (a million
/// queued URLs then cost a few bytes of memory each, not 500). The store
/// this engine uses is a scratch SQLite file beside the state
/// (`SQLitePendingRequests`); a shared queue would keep them in
/// its database behind the same calls. Downloads are named by their number
/// (`DownloadID.rawValue`).
///
/// Safe from any thread: the registry writes from the adding thread, the
/// engine reads from its own.
package protocol PendingRequests: AnyObject, Sendable {
    /// Stores `request` (its key `key`) as download `number`, unless a request
    /// with that key is stored: then nothing is stored and that request's
    /// number comes back.
    func insert(_ number: Int, key: String, _ request: DownloadRequest) throws(StateFailure) -> Int?
    /// The number of the stored request whose key is `key`.
    func number(ofKey key: String) throws(StateFailure) -> Int?
    /// The request stored as download `number`.
    func request(_ number: Int) throws(StateFailure) -> DownloadRequest?
    /// Stored requests from download `number` on, in order, at most `limit`:
    /// a long queue is read back in pages.
    func requests(from number: Int, limit: Int) throws(StateFailure) -> [(number: Int, request: DownloadRequest)]
    /// Forgets download `number`, its key and its request.
    func remove(_ number: Int) throws(StateFailure)
}

/// Which requests a `PendingRequests` store may hold.
package enum PendingRule {
    /// Whether a request may be stored: one that carries credentials or data
    /// the state must never hold (a user part in its URL, headers, a body,
    /// the library's meta values) stays in memory. Such requests are rare.
    package static func storable(_ request: DownloadRequest) -> Bool {
        request.headers.isEmpty && request.body == nil && request.meta.isEmpty && request.split == nil
            && !hasUserPart(request.url)
    }

    /// Whether the URL's authority has a `user[:password]@` part
    /// (`RedactedURL.userPart`): this runs for every add past the memory share.
    package static func hasUserPart(_ url: String) -> Bool {
        var url = url
        return url.withUTF8 { RedactedURL.userPart($0) != nil }
    }
}

/// `PendingRequests` in memory: the reference the stored kinds are held to in
/// tests, and the store of a run without state.
package final class MemoryPendingRequests: PendingRequests {
    private struct Tables {
        var byKey: [String: Int] = [:]
        var requests: [Int: (key: String, request: DownloadRequest)] = [:]
    }
    private let tables = Mutex(Tables())

    package init() {}

    package func insert(_ number: Int, key: String, _ request: DownloadRequest) -> Int? {
        tables.withLock { tables in
            if let known = tables.byKey[key] { return known }
            tables.byKey[key] = number
            tables.requests[number] = (key, request)
            return nil
        }
    }

    package func number(ofKey key: String) -> Int? { tables.withLock { $0.byKey[key] } }

    package func request(_ number: Int) -> DownloadRequest? { tables.withLock { $0.requests[number]?.request } }

    package func requests(from number: Int, limit: Int) -> [(number: Int, request: DownloadRequest)] {
        tables.withLock { tables in
            tables.requests.keys.filter { $0 >= number }.sorted().prefix(limit).map { ($0, tables.requests[$0]!.request) }
        }
    }

    package func remove(_ number: Int) {
        tables.withLock { tables in
            guard let (key, _) = tables.requests.removeValue(forKey: number) else { return }
            if tables.byKey[key] == number { tables.byKey[key] = nil }
        }
    }
}
