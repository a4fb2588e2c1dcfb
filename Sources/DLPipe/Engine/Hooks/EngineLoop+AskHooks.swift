/// The hook calls a job's state asks for (`askResponseHook`, ...): each
/// reply comes back as a command, once, within the hook deadline (`hookReply`).
extension EngineLoop {
    func askResponseHook(_ job: Job) {
        guard let ask = hooks?.response, let response = job.response else { return }
        let id = job.id
        let reply = hookReply("response", expiry: { .responseVerdict(id, .fail($0)) }) {
            .responseVerdict(id, $0)
        }
        ask(job.info(root: root), response, reply)
    }

    func askFinishedHook(_ job: Job) {
        guard let ask = hooks?.finished, let result = job.result else { return }
        let id = job.id
        let reply = hookReply("finished", expiry: { .finishedVerdict(id, .fail($0)) }) {
            .finishedVerdict(id, $0)
        }
        ask(job.info(root: root), result, reply)
    }

    /// The file of a finished download is where it stays: a notice, whose
    /// reply only says the hook is done (a late one changes nothing).
    func tellPlaced(_ info: DownloadInfo, _ result: FinishedInfo) {
        guard let tell = hooks?.placed else { return }
        let reply = hookReply("placed", expiry: { _ in .placedDone }) { (_: Void) in .placedDone }
        tell(info, result) { reply(()) }
    }

    func askRetryingHook(_ job: Job, delay: Double) {
        guard let ask = hooks?.retrying, let error = job.state.pendingError else { return }
        let id = job.id
        let reply = hookReply("retrying", expiry: { .retryVerdict(id, .fail($0)) }) {
            .retryVerdict(id, $0)
        }
        ask(job.info(root: root), error, delay, reply)
    }

    func askFailedHook(_ job: Job) {
        guard let ask = hooks?.failed, let error = job.state.pendingError else { return }
        let id = job.id
        let reply = hookReply("failed", expiry: { .failureVerdictMissed(id, $0) }) {
            .failureVerdict(id, $0)
        }
        ask(job.info(root: root), error, reply)
    }
}
