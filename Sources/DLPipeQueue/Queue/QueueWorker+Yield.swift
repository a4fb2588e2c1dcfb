import DLPipe

/// Claims held ahead give way to hosts that wait (issue #36,
/// `SharedQueue.hostsStarve`): while a host of the job has downloads due
/// and nothing in flight, a worker claims nothing ahead and gives back the
/// claims it holds ahead (as they were: no attempt counted, their place in
/// line kept), so that the slots of its transfers go back to the queue as
/// they end and the queue's claim, least recently served host first, gives
/// them to the hosts that wait.
extension QueueWorker.State {
    /// Every claim held ahead, out of `ahead`: still held (and in
    /// `stranded`) until the queue takes them back (`released`).
    mutating func yieldAhead() -> [(claim: ClaimedRequest, token: Int64, host: String)] {
        guard aheadCount > 0 else { return [] }
        var yielded: [(claim: ClaimedRequest, token: Int64, host: String)] = []
        for (host, waiting) in ahead {
            for claim in waiting.elements {
                let id = Int64(claim.number)
                apply(.stranded, to: id)
                if let token = token(id) { yielded.append((claim, token, host)) }
            }
        }
        ahead = [:]
        aheadCount = 0
        return yielded
    }
}
