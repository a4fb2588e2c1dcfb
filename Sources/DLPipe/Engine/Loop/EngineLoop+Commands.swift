import Foundation

/// The commands other threads post (`EngineLoop.Command`), carried out on the
/// engine thread one by one as the loop takes them from its inbox.
extension EngineLoop {
    func handle(_ command: Command) {
        assertOnEngineThread()
        switch command {
        case .add(let admitted): add(admitted)
        case .addAll(let requests): for admitted in requests { add(admitted) }
        case .holdStarts: schedule.startsHeld += 1
        case .releaseStarts: schedule.startsHeld -= 1
        case .participant(let update): update.apply(to: self)
        case .pause(let id): feed(id, .pause)
        case .resume(let id): feed(id, .resume)
        case .cancel(let id): feed(id, .cancel)
        case .fail(let id, let error):
            guard let job = job(id) else { break }
            feed(job, .fail(error))
        case .responseVerdict(let id, let verdict):
            hookCalls.pendingHookCalls -= 1
            applyResponseVerdict(id, verdict)
        case .finishedVerdict(let id, let verdict):
            hookCalls.pendingHookCalls -= 1
            applyFinishedVerdict(id, verdict)
        case .retryVerdict(let id, var verdict):
            hookCalls.pendingHookCalls -= 1
            if case .delay(let seconds) = verdict { verdict = .delay(boundedDelay(seconds)) }
            feed(id, .retryVerdict(verdict))
        case .failureVerdict(let id, var verdict):
            hookCalls.pendingHookCalls -= 1
            if case .retry(let seconds) = verdict { verdict = .retry(after: boundedDelay(seconds)) }
            feed(id, .failureVerdict(verdict))
        case .failureVerdictMissed(let id, let error):
            hookCalls.pendingHookCalls -= 1
            feed(id, .fail(error))
        case .requestVerdict(let id, let generation, let verdict):
            hookCalls.pendingHookCalls -= 1
            applyRequestVerdict(id, generation: generation, verdict)
        case .placedDone:
            hookCalls.pendingHookCalls -= 1
        case .drainedVerdict(let code):
            hookCalls.pendingHookCalls -= 1
            DrainTrace.note("engine: drainedVerdict \(String(describing: code)) open=\(ledger.openJobs) pending=\(hookCalls.pendingHookCalls) ledger.drainPending=\(ledger.drainPending)")
            if let code { ledger.exitCode = code }
            // A shared queue's worker answers without a code when it handed
            // this engine more claimed downloads: it is asked again at the
            // next drain, and ends the run with the run's code.
            if isShared && code == nil { ledger.askedDrainHook = false }
        case .synced(let number):
            settle(disk.syncingBatches.removeValue(forKey: number) ?? [])
        case .resumeHashed(let id, let hash): resumeHashed(id, hash)
        case .contentChecked(let id, let check): contentChecked(id, check)
        case .segmentsSynced(let id, let text): segmentsSynced(id, text)
        case .waitIdle(let reply):
            // A run that never drained drains once now, even with nothing queued:
            // `done` handlers fire once per run at least.
            if !ledger.drainedOnce { ledger.drainPending = true }
            DrainTrace.note("engine: waitIdle open=\(ledger.openJobs) paused=\(schedule.pausedJobs.count) pending=\(hookCalls.pendingHookCalls) ledger.drainPending=\(ledger.drainPending) asked=\(ledger.askedDrainHook)")
            if ledger.openJobs - schedule.pausedJobs.count == 0 && hookCalls.pendingHookCalls == 0 && !ledger.drainPending {
                reply(ledger.summary, ledger.exitCode)
            } else {
                ledger.idleWaiters.append(reply)
            }
        case .countsNow(let reply):
            reply(ledger.summary, ledger.exitCode)
        case .waitOutcome(let id, let reply):
            if jobs[id] != nil || schedule.waiting[id] != nil || schedule.waitingStored.contains(id.rawValue) {
                ledger.outcomeWaiters[id, default: []].append(reply)
            } else {
                reply(ledger.outcomes[id])
            }
        case .stop(let done):
            ledger.stopped = true
            if let done { ledger.stopWaiters.append(done) }
        }
    }

    /// A hook's retry delay within 0 and the backoff cap: `dl.retry(math.huge)`
    /// would be a timer that never fires.
    func boundedDelay(_ seconds: Double) -> Double {
        seconds.isFinite ? min(max(0, seconds), configuration.backoffCap) : configuration.backoffCap
    }

    func add(_ admitted: AdmittedRequest) {
        let id = admitted.id
        var request = admitted.request
        // A URL past the limit (`URLLimit`): the registry refused it, or it
        // came from a shared queue's row. Checked before any work on it, and
        // shown shortened in its events.
        let refused = admitted.refused ?? URLLimit.problem(request.url)
        if refused != nil { request.url = URLLimit.shown(request.url) }
        ledger.openJobs += 1
        ledger.drainPending = true
        ledger.askedDrainHook = false
        emit(.queued(Job.queuedInfo(id: id, request: request)))
        if let refused {
            let job = Job(id: id, request: request, host: "")
            jobs[id] = job
            job.state.endBeforeStart(.failed)
            finish(job, .failed(DownloadError(.url, refused)))
            return
        }
        guard let parts = URLParts(request.url), parts.isHTTP, !parts.hostPort.isEmpty else {
            let job = Job(id: id, request: request, host: "")
            jobs[id] = job
            job.state.endBeforeStart(.failed)
            finish(job, .failed(DownloadError(.url, "unsupported URL \(quoted(RedactedURL.text(request.url))): only http and https are fetched")))
            return
        }
        // The CLI and the Lua bridge refuse such headers before they get here;
        // this keeps a library caller's CR LF from reaching the server as a
        // header of its own.
        if !request.headers.isEmpty, let problem = HeaderField.problem(in: request.headers) {
            let job = Job(id: id, request: request, host: parts.hostPort)
            jobs[id] = job
            job.state.endBeforeStart(.failed)
            finish(job, .failed(DownloadError(.hook, problem)))
            return
        }
        if admitted.stored {
            schedule.waitingStored.insert(id.rawValue)
        } else {
            schedule.waiting[id] = WaitingRequest(request, host: parts.hostPort, priorAttempts: admitted.priorAttempts)
        }
        scheduler.enqueue(id, host: parts.hostPort, priority: request.priority)
    }
}
