/// A shared queue's retry: the queue, not this engine, waits out the backoff,
/// so that any worker may take the next attempt.
extension EngineLoop {
    /// Forgets a download whose retry the shared queue schedules: it leaves
    /// this engine as if it had ended, without a terminal event and without
    /// a count (the queue counts it when a worker ends it for good). Its
    /// record stays (partial, with the error). Its part file stays in this
    /// worker's folder: claimed here again, it resumes from it; claimed by
    /// another worker, it is removed when this one leaves.
    func handOver(_ job: Job) {
        assertOnEngineThread()
        closeJob(job)
        // Its outcome comes from another claim, which this engine may never see.
        for reply in ledger.outcomeWaiters.removeValue(forKey: job.id) ?? [] { reply(nil) }
        jobs[job.id] = nil
    }

    /// What every download leaving this engine undoes, ended or handed over:
    /// its key is free again, it no longer counts as open or paused, and its
    /// name goes back to the registry of names.
    func closeJob(_ job: Job) {
        registry.ended(job.id, job.request)
        ledger.openJobs -= 1
        schedule.pausedJobs.remove(job.id)
        if let target = job.target { targets.release(target) }
    }
}
