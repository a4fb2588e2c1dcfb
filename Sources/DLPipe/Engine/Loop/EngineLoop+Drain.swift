import Foundation

/// The run's end: `drained` when nothing is left to do, and the stop.
extension EngineLoop {
    /// Fires `drained` when the queue is empty and nothing is pending.
    func checkIdle() {
        guard ledger.openJobs - schedule.pausedJobs.count == 0, hookCalls.pendingHookCalls == 0, ledger.drainPending || !ledger.idleWaiters.isEmpty else {
            return
        }
        if ledger.drainPending && interests.contains(.drained) && !ledger.askedDrainHook, let hooks {
            ledger.askedDrainHook = true
            DrainTrace.note("engine: asks drained (waiters=\(ledger.idleWaiters.count))")
            ledger.summary.seconds = EngineLoop.now() - startedAt
            let snapshot = ledger.summary
            let reply = hookReply("done", expiry: { _ in .drainedVerdict(nil) }) { .drainedVerdict($0) }
            hooks.drained?(snapshot, reply)
            return
        }
        if configuration.endPausedWhenDrained && !schedule.pausedJobs.isEmpty {
            // Nothing else will run, and nobody is left to resume these: end them
            // so that every download gets its terminal event and the run ends.
            for id in schedule.pausedJobs.sorted() {
                feed(id, .fail(DownloadError(.cancelled, "paused and never resumed; its part file is removed")))
            }
        }
        DrainTrace.note("engine: drain ends ledger.exitCode=\(String(describing: ledger.exitCode)) waiters=\(ledger.idleWaiters.count)")
        ledger.drainPending = false
        ledger.drainedOnce = true
        endRun()
        // The jar is written at every drain, so the summary can say it failed.
        if let cookies { ledger.summary.cookieJarError = cookies.save() }
        if configuration.robots { ledger.summary.warnings = robotsWarnings() }
        ledger.askedDrainHook = false
        ledger.summary.seconds = EngineLoop.now() - startedAt
        emit(.drained(ledger.summary))
        let waiters = ledger.idleWaiters
        ledger.idleWaiters = []
        for waiter in waiters { waiter(ledger.summary, ledger.exitCode) }
    }

    /// The stop: transfers end with their part files kept, every download still
    /// open ends as `stopped` (its one terminal event), the streams end, and the
    /// inbox closes: what comes later is answered at once (`AfterStop`).
    func shutDown() {
        assertOnEngineThread()
        placeDurableFiles(force: true)
        hooks?.endOfTurn?()
        // A split download's segments may run after its first transfer ended.
        for job in jobs.values where job.transfer != nil || pool.splits[job.id] != nil {
            perform([.abortTransfer(keepPart: true)], job)
            saveState(job, .partial)
        }
        flushState(force: true)
        endRun()
        registry.close()
        // Ids first, then one event at a time: a queue of a million waiting
        // requests must not become a million infos at once.
        var openAtStop = Set(jobs.keys)
        openAtStop.formUnion(schedule.waiting.keys)
        var storedAtStop = StoredQueue(numbers: schedule.waitingStored.sorted, registry: registry)
        openAtStop.formUnion(storedAtStop.ids)
        for id in openAtStop.sorted() {
            let info = jobs[id]?.info(root: root)
                ?? Job.queuedInfo(id: id, request: schedule.waiting[id]?.request ?? storedAtStop.request(id))
            emit(.stopped(info))
            for reply in ledger.outcomeWaiters.removeValue(forKey: id) ?? [] { reply(.stopped) }
        }
        jobs = [:]
        schedule.waiting = [:]
        schedule.waitingStored.removeAll()
        for (_, replies) in ledger.outcomeWaiters { for reply in replies { reply(nil) } }
        ledger.outcomeWaiters = [:]
        events.finish()
        let waiters = ledger.idleWaiters
        ledger.idleWaiters = []
        for waiter in waiters { waiter(ledger.summary, ledger.exitCode) }
        let last = inbox.close(
            AfterStop(outcomes: ledger.outcomes, stopped: openAtStop, summary: ledger.summary, exitCode: ledger.exitCode))
        ledger.outcomes = [:]
        for command in ledger.lateCommands + last { inbox.answerAfterStop(command) }
        ledger.lateCommands = []
        for waiter in ledger.stopWaiters { waiter() }
        ledger.stopWaiters = []
        // Their threads end once idle (the queued blocks still run).
        disk.syncQueue.end()
        disk.resumeHashQueue.end()
    }

    /// The drain's state every two seconds (DrainTrace).
    func traceState() {
        let now = EngineLoop.now()
        guard now >= ledger.nextTrace else { return }
        ledger.nextTrace = now + 2
        DrainTrace.note("engine: state open=\(ledger.openJobs) jobs=\(jobs.count) schedule.waiting=\(schedule.waiting.count) paused=\(schedule.pausedJobs.count) pending=\(hookCalls.pendingHookCalls) ledger.drainPending=\(ledger.drainPending) asked=\(ledger.askedDrainHook) ledger.drainedOnce=\(ledger.drainedOnce) waiters=\(ledger.idleWaiters.count) schedule.startsHeld=\(schedule.startsHeld) queued=\(scheduler.queued) active=\(scheduler.active) pool.transfers=\(pool.transfers.count) fenced=\(disk.fencedPlacements.count) durable=\(disk.awaitingDurability.count) syncing=\(disk.syncingBatches.values.reduce(0) { $0 + $1.count }) commit=\(disk.awaitingCommit.count)")
    }
}
