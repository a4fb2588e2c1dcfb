/// Queued downloads whose request waits in the registry's store
/// (`PendingRequests`): the engine keeps their number only, and reads the
/// request back when the download is first needed (it starts, or is paused,
/// cancelled or waited for).
extension EngineLoop {
    /// The job of a stored download, made from its request read back. A
    /// request that cannot be read back fails its download (kind `io`): its URL
    /// is not known any more, and the next run adds it again from its list.
    func storedJob(_ id: DownloadID) -> Job {
        let request: DownloadRequest
        do throws(StateFailure) {
            guard let stored = try registry.storedRequest(id) else {
                throw StateFailure(message: "the file of queued downloads has no request \(id)")
            }
            request = stored
        } catch {
            let job = Job(id: id, request: DownloadRequest(url: ""), host: "")
            jobs[id] = job
            scheduler.withdraw(id)
            job.state.endBeforeStart(.failed)
            finish(job, .failed(DownloadError(.io, "\(error.message); the download was not started")))
            return job
        }
        let job = Job(id: id, request: request, host: URLParts(request.url)?.hostPort ?? "")
        jobs[id] = job
        if applyState(job) { scheduler.withdraw(id) }
        return job
    }
}

/// The stored requests of the downloads still queued at a stop, read back in
/// pages in id order (the stop names each in its `stopped` event).
struct StoredQueue {
    let ids: [DownloadID]
    private let registry: DownloadRegistry
    private var page: [Int: DownloadRequest] = [:]
    private var pageEnd = 0
    private static let pageSize = 1024

    init(numbers: [Int], registry: DownloadRegistry) {
        self.ids = numbers.map { DownloadID($0, engine: registry.engine) }
        self.registry = registry
    }

    /// The request of `id`; asked in increasing id order. One that cannot be
    /// read back is named by its id alone (an empty URL).
    mutating func request(_ id: DownloadID) -> DownloadRequest {
        if let request = page.removeValue(forKey: id.rawValue) { return request }
        if id.rawValue >= pageEnd {
            let read = (try? registry.storedRequests(from: id, limit: Self.pageSize)) ?? []
            page = Dictionary(read.map { ($0.number, $0.request) }) { first, _ in first }
            pageEnd = (read.last?.number ?? id.rawValue) + 1
        }
        return page.removeValue(forKey: id.rawValue) ?? DownloadRequest(url: "")
    }
}
