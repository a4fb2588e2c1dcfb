/// A download a shared queue's worker claimed, for `DownloadEngine.addClaimed`.
package struct ClaimedRequest: Sendable {
    /// Its id in the queue, which becomes its id in this engine.
    package let number: Int
    package let request: DownloadRequest
    /// Attempts made before this claim (by any worker): the retry budget
    /// and the backoff go on from there.
    package let priorAttempts: Int

    package init(number: Int, request: DownloadRequest, priorAttempts: Int = 0) {
        self.number = number
        self.request = request
        self.priorAttempts = max(0, priorAttempts)
    }
}
