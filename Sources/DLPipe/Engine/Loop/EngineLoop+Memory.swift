/// Memory downloads (`DownloadRequest.into == .memory`): the body stays in
/// memory up to the download's limit and reaches the `finished` event as
/// `FinishedInfo.body`. No target is chosen, no name reserved, no part file
/// or held file made and no state record saved (`saveState` and `applyState`
/// pass them by), so the file machinery never sees them.
extension EngineLoop {
    /// The response of a memory download: the response hook, if any, decides
    /// while the first bytes wait in the transfer's buffer; else every byte is
    /// collected.
    func acceptIntoMemory(_ job: Job, _ transfer: Transfer, _ response: ResponseInfo) -> BodyDecision {
        let actions = job.state.handle(.responseArrived(askHook: interests.contains(.response)))
        emit(.response(job.info(root: root), response))
        guard actions.contains(.askResponseHook) else { return .collect }
        perform(actions, job)
        return pool.transfers[transfer.easy.handle] === transfer ? .buffer : .pause
    }

    /// The response hook let a live memory download go on.
    func continueIntoMemory(_ job: Job, _ transfer: Transfer) {
        let paused = transfer.body.pausesCurl
        transfer.collectInMemory()
        if paused { transfer.easy.unpause() }
    }

    /// The transfer ended while the response hook decided: its bytes are the body.
    func completeIntoMemory(_ job: Job, _ transfer: Transfer) {
        job.state.updateAttempt { $0.transferEnded() }
        transfer.collectInMemory()
        transfer.keepWholeBody()
        job.progress.received(transfer.received)
        memoryBodyComplete(job, transfer)
    }

    /// The whole body is in memory: checked (length, SHA-256), then finished.
    func memoryBodyComplete(_ job: Job, _ transfer: Transfer) {
        let body = transfer.wholeBody ?? []
        let size = Int64(body.count)
        if let expected = job.response?.length, size != expected {
            return attemptFailed(job, DownloadError(.network, "the body ended after \(size) of \(expected) bytes"))
        }
        reportWholeBody(job, bytes: size)
        let digest: String?
        switch checkedDigest(of: body, job, naming: "the body of \(RedactedURL.text(job.request.url))") {
        case .success(let value): digest = value
        case .failure(let error): return attemptFailed(job, error)
        }
        job.claim.dropPart()
        job.finishes(with: FinishedInfo(
            path: "", bytes: size, sha256: digest, type: job.response?.type ?? "",
            seconds: EngineLoop.now() - (job.startedAt ?? EngineLoop.now()), unchanged: false, body: body,
            headers: job.response?.headers ?? [:]))
        feed(job, .transferSucceeded(askHook: interests.contains(.finished)))
    }

    /// The SHA-256 of a whole body in memory when it is wanted (`sha256` asked
    /// for, `alwaysHash`, or a file's under `verify`), checked against the one
    /// asked for; `what` names the body in the error.
    func checkedDigest(of body: [UInt8], _ job: Job, naming what: String) -> Result<String?, DownloadError> {
        guard wantsHash(job) else { return .success(nil) }
        let hasher = SHA256Hasher()
        body.withUnsafeBytes { hasher.update($0) }
        let digest = hasher.finalHex()
        if let wanted = job.request.sha256?.lowercased(), wanted != digest {
            return .failure(DownloadError(.checksum, "SHA-256 of \(what) is \(digest), expected \(wanted)"))
        }
        return .success(digest)
    }
}
