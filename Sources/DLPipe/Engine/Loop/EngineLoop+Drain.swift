import Foundation

/// The run's end: `drained` when nothing is left to do, and the stop.
extension EngineLoop {
    /// Fires `drained` when the queue is empty and nothing is pending.
    func checkIdle() {
        guard openJobs - pausedJobs.count == 0, pendingHookCalls == 0, drainPending || !idleWaiters.isEmpty else {
            return
        }
        if drainPending && interests.contains(.drained) && !askedDrainHook, let hooks {
            askedDrainHook = true
            DrainTrace.note("engine: asks drained (waiters=\(idleWaiters.count))")
            summary.seconds = EngineLoop.now() - startedAt
            let snapshot = summary
            let reply = hookReply("done", expiry: { _ in .drainedVerdict(nil) }) { .drainedVerdict($0) }
            hooks.drained?(snapshot, reply)
            return
        }
        if configuration.endPausedWhenDrained && !pausedJobs.isEmpty {
            // Nothing else will run, and nobody is left to resume these: end them
            // so that every download gets its terminal event and the run ends.
            for id in pausedJobs.sorted() {
                feed(id, .fail(DownloadError(.cancelled, "paused and never resumed; its part file is removed")))
            }
        }
        DrainTrace.note("engine: drain ends exitCode=\(String(describing: exitCode)) waiters=\(idleWaiters.count)")
        drainPending = false
        drainedOnce = true
        endRun()
        // The jar is written at every drain, so the summary can say it failed.
        if let cookies { summary.cookieJarError = cookies.save() }
        askedDrainHook = false
        summary.seconds = EngineLoop.now() - startedAt
        emit(.drained(summary))
        let waiters = idleWaiters
        idleWaiters = []
        for waiter in waiters { waiter(summary, exitCode) }
    }

    /// The stop: transfers end with their part files kept, every download still
    /// open ends as `stopped` (its one terminal event), the streams end, and the
    /// inbox closes: what comes later is answered at once (`AfterStop`).
    func shutDown() {
        assertOnEngineThread()
        placeDurableFiles(force: true)
        hooks?.endOfTurn?()
        for job in jobs.values where job.transfer != nil {
            perform([.abortTransfer(keepPart: true)], job)
            saveState(job, .partial)
        }
        flushState(force: true)
        endRun()
        registry.close()
        // Ids first, then one event at a time: a queue of a million waiting
        // requests must not become a million infos at once.
        var openAtStop = Set(jobs.keys)
        openAtStop.formUnion(waiting.keys)
        var storedAtStop = StoredQueue(numbers: waitingStored.sorted, registry: registry)
        openAtStop.formUnion(storedAtStop.ids)
        for id in openAtStop.sorted() {
            let info = jobs[id]?.info(root: root)
                ?? Job.queuedInfo(id: id, request: waiting[id]?.request ?? storedAtStop.request(id))
            emit(.stopped(info))
            for reply in outcomeWaiters.removeValue(forKey: id) ?? [] { reply(.stopped) }
        }
        jobs = [:]
        waiting = [:]
        waitingStored.removeAll()
        for (_, replies) in outcomeWaiters { for reply in replies { reply(nil) } }
        outcomeWaiters = [:]
        events.finish()
        let waiters = idleWaiters
        idleWaiters = []
        for waiter in waiters { waiter(summary, exitCode) }
        let last = inbox.close(
            AfterStop(outcomes: outcomes, stopped: openAtStop, summary: summary, exitCode: exitCode))
        outcomes = [:]
        for command in lateCommands + last { inbox.answerAfterStop(command) }
        lateCommands = []
        for waiter in stopWaiters { waiter() }
        stopWaiters = []
        // Their threads end once idle (the queued blocks still run).
        syncQueue.end()
        resumeHashQueue.end()
    }

    /// The drain's state every two seconds (DrainTrace).
    func traceState() {
        let now = EngineLoop.now()
        guard now >= nextTrace else { return }
        nextTrace = now + 2
        DrainTrace.note("engine: state open=\(openJobs) jobs=\(jobs.count) waiting=\(waiting.count) paused=\(pausedJobs.count) pending=\(pendingHookCalls) drainPending=\(drainPending) asked=\(askedDrainHook) drainedOnce=\(drainedOnce) waiters=\(idleWaiters.count) startsHeld=\(startsHeld) queued=\(scheduler.queued) active=\(scheduler.active) transfers=\(transfers.count) fenced=\(fencedPlacements.count) durable=\(awaitingDurability.count) syncing=\(syncingBatches.values.reduce(0) { $0 + $1.count }) commit=\(awaitingCommit.count)")
    }
}
