/// The `request` hook: before every request (each attempt's first hop and each
/// redirect hop) it gives the headers of that hop. Engines without such a hook
/// never come here (`interests`), so their requests wait for nothing.
extension EngineLoop {
    /// Asks the hook for the current hop's headers; the transfer starts when
    /// the reply comes (`applyRequestVerdict`). The job stays `requesting`.
    /// Like every hook call, the first reply counts and a hook that does not
    /// reply within `hookDeadline` fails the download with kind `hook`
    /// (`hookReply`).
    func askRequestHook(_ job: Job) {
        let generation = job.turns.askRequestHook()
        let id = job.id
        let request = RequestInfo(url: job.currentURL, attempt: max(1, job.state.attempt), headers: hopHeaders(for: job))
        guard let ask = hooks?.request else {
            // Not reached (`interests` says a closure is set); the hop goes
            // out with its own headers rather than waiting for nobody.
            job.state.updateAttempt { $0.hookGave(headers: request.headers) }
            return startTransfer(job)
        }
        let reply = hookReply("request", expiry: { .requestVerdict(id, generation: generation, .fail($0)) }) {
            .requestVerdict(id, generation: generation, $0)
        }
        ask(job.info(root: root), request, reply)
    }

    /// Starts the hop with the hook's headers, unless a pause, a cancel, a
    /// failure or a newer call overtook the reply.
    func applyRequestVerdict(_ id: DownloadID, generation: Int, _ verdict: RequestVerdict) {
        guard let job = jobs[id], job.requestGeneration == generation, job.state.phase.kind == .requesting,
            job.transfer == nil
        else { return }
        switch verdict {
        case .fail(let error):
            feed(job, .fail(error))
        case .send(let headers):
            if let problem = HeaderField.problem(in: headers) {
                return feed(job, .fail(DownloadError(.hook, "request handler: \(problem)")))
            }
            job.state.updateAttempt { $0.hookGave(headers: headers) }
            startTransfer(job)
        }
    }
}
