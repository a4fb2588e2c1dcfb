/// The `request` hook: before every request (each attempt's first hop and each
/// redirect hop) it gives the headers of that hop. Engines without such a hook
/// never come here (`interests`), so their requests wait for nothing.
extension EngineLoop {
    /// Asks the hook for the current hop's headers; the transfer starts when
    /// the reply comes (`applyRequestVerdict`). The job stays `requesting`.
    func askRequestHook(_ job: Job) {
        guard let hooks else { return }
        job.requestGeneration += 1
        let generation = job.requestGeneration
        let id = job.id
        let request = RequestInfo(url: job.currentURL, attempt: max(1, job.state.attempt), headers: hopHeaders(for: job))
        pendingHookCalls += 1
        hooks.request(job.info(root: root), request) { [self] verdict in
            post(.requestVerdict(id, generation: generation, verdict))
        }
    }

    /// Starts the hop with the hook's headers, unless a pause, a cancel, a
    /// failure or a newer call overtook the reply.
    func applyRequestVerdict(_ id: DownloadID, generation: Int, _ verdict: RequestVerdict) {
        guard let job = jobs[id], job.requestGeneration == generation, job.state.phase == .requesting,
            job.transfer == nil
        else { return }
        switch verdict {
        case .fail(let error):
            feed(job, .fail(error))
        case .send(let headers):
            if let problem = HeaderField.problem(in: headers) {
                return feed(job, .fail(DownloadError(.hook, "request handler: \(problem)")))
            }
            job.hopHeaders = headers
            startTransfer(job)
        }
    }
}
