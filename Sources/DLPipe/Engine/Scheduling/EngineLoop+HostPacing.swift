/// Politeness per host: requests wait for their host's turn (HostPacing).
extension EngineLoop {
    /// Takes the host's next turn for the job's request; true when it must
    /// wait (a timer starts it, `hostTurnCame`).
    func waitsForHostTurn(_ job: Job) -> Bool {
        guard let host = URLParts(job.currentURL)?.hostPort else { return false }
        let now = EngineLoop.now()
        var wait = schedule.hostPacing.reserve(host, now: now)
        if wait <= 0 { wait = schedule.hostPacing.start(host, now: now) }
        guard wait > 0 else { return false }
        job.turns.waitForTurn()
        schedule.hostTurns.push((now + wait, job.id, job.requestGeneration))
        return true
    }

    /// The host's turn came: the request starts, unless a pause, a cancel or
    /// a failure overtook it, or a Retry-After that came while it waited holds
    /// the host back (then it takes a new turn after the hold).
    func hostTurnCame(_ id: DownloadID, generation: Int) {
        guard let job = jobs[id], job.requestGeneration == generation, job.paced,
            job.state.phase.kind == .requesting, job.transfer == nil
        else { return }
        if let host = URLParts(job.currentURL)?.hostPort {
            let now = EngineLoop.now()
            if schedule.hostPacing.isHeld(host, now: now) {
                job.turns.turnEnded()
                if waitsForHostTurn(job) { return }
            } else {
                // A turn served late moved the host's last start: wait out the rest.
                let rest = schedule.hostPacing.start(host, now: now)
                if rest > 0 { return schedule.hostTurns.push((now + rest, job.id, job.requestGeneration)) }
            }
        }
        startTransfer(job)
    }

    /// A 429 or 503 with Retry-After: the whole host waits, not only this URL.
    /// A shared queue's worker is told at once (`QueueParticipant.hostHeld`).
    func holdBackHost(of job: Job, for seconds: Double) {
        guard let host = URLParts(job.currentURL)?.hostPort else { return }
        schedule.hostPacing.holdBack(host, for: seconds, now: EngineLoop.now())
        if seconds > 0 { queue.hostHeld(job.id.rawValue, host: host, seconds: seconds) }
    }

    /// Claims of a shared queue came for these URLs' hosts: the queue holds
    /// hosts back for every worker, so a Retry-After hold of this engine's
    /// own ends there (`HostPacing.liftHold`).
    func hostsDueByQueue(_ urls: [String]) {
        for url in urls {
            guard let host = URLParts(url)?.hostPort else { continue }
            schedule.hostPacing.liftHold(host)
        }
    }
}
