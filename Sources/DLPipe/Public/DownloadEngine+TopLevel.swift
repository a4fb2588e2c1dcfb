extension DownloadEngine {
    /// `add(contentsOf:)` for a job's top-level adds, all at once. In a
    /// shared queue's worker, a run whose top level another worker queued
    /// whole (the same adds) gives their ids without sending them again.
    package func addTopLevel(contentsOf requests: some Sequence<DownloadRequest>) -> [DownloadID] {
        guard let shared else { return add(contentsOf: requests) }
        let numbers = shared.addTopLevel(requests.map { request in
            var request = request
            request.url = URLNormalization.normalize(request.url)
            return request
        })
        return numbers.map { DownloadID($0, engine: registry.engine) }
    }
}
