import DLPipe
import Foundation

/// The lease: heartbeats every third of it, taking back the claims of workers
/// whose lease ran out, removing their part files; and the LISTEN connection
/// that wakes the claim loop when work is queued.
extension QueueWorker {
    func heartbeatLoop() {
        let lease = max(2, settings.lease)
        let every = lease / 3
        // What a lost lease is blamed on: the last heartbeat that failed since
        // the last acknowledged one, and when this loop last ran (a worker
        // frozen by SIGSTOP or a suspended machine does not run it at all).
        var failure: String?
        var lastBeat = QueueClock.now()
        // No claims are taken back before this (monotonic time): set when this
        // worker's own heartbeats were away longer than its lease (a database
        // outage, most likely, that the other workers went through too), so
        // that they have a lease to come back and keep their claims, rather
        // than the first worker back declaring all the others dead at once.
        var takeBackFrom = 0.0
        // When this worker said its database went away (monotonic), and
        // when it last heard from it then: it says so once, and once when
        // the database is back (an outage was silent until the worker gave up).
        var toldAway: (at: Double, lastHeard: Double)?
        while !state.withLock({ $0.stopping }) {
            let sent = QueueClock.now()
            let stalled = sent - lastBeat
            lastBeat = sent
            do {
                let (acknowledged, takenBack) = try heartbeatLink.run(patience: every) { connection throws(PostgresError) in
                    let acknowledged = try queue.heartbeat(worker: worker, on: connection)
                    if acknowledged != nil { try actOnControls(on: connection) }
                    let now = QueueClock.now()
                    if acknowledged != nil, now - state.withLock({ $0.lastAcknowledged }) > lease {
                        takeBackFrom = now + lease
                    }
                    // A frozen worker's open transaction may hold its claims' rows:
                    // wait for them a moment, and try again at the next beat.
                    let takenBack = acknowledged == nil || now < takeBackFrom
                        ? 0 : try queue.takeBack(waitingAtMost: every / 4, on: connection)
                    return (acknowledged, takenBack)
                }
                guard let acknowledged else {
                    let silent = state.withLock { state -> Double in
                        state.leaseLost = true
                        return QueueClock.now() - state.lastAcknowledged
                    }
                    fatal(Self.lostLease(lease: lease, silent: silent, stalled: max(stalled, QueueClock.now() - sent), failure: failure))
                    return
                }
                failure = nil
                if let away = toldAway {
                    toldAway = nil
                    onNotice(backMessage(away: QueueClock.now() - away.lastHeard))
                }
                state.withLock { state in
                    state.lastAcknowledged = sent
                    // Measured from when the heartbeat was sent: the database's
                    // lease began no earlier than that.
                    state.placeUntil = sent + acknowledged - Self.margin(acknowledged)
                }
                if takenBack > 0 {
                    removeDeadWorkersParts()
                    signal()
                }
            } catch {
                failure = error.message
                let since = state.withLock { QueueClock.now() - $0.lastAcknowledged }
                if since > settings.outage {
                    fatal(outageMessage(away: since, error))
                    return
                }
                if toldAway == nil {
                    toldAway = (QueueClock.now(), QueueClock.now() - since)
                    onNotice(awayMessage(away: since, error))
                }
            }
            let left = every - (QueueClock.now() - sent)
            if left > 0 { Thread.sleep(forTimeInterval: left) }
        }
    }

    /// The line of a worker whose lease passed to the others: what happened
    /// (it could not reach the database; it did not run at all: frozen,
    /// stopped, a suspended machine; or it ran and beat on time, and its
    /// heartbeats still came too late) and what it did about its files.
    /// `stalled`: the longest this worker's heartbeat loop went without
    /// running or without an answer, on its own clock.
    static func lostLease(lease: Double, silent: Double, stalled: Double, failure: String?) -> String {
        let seconds = { (value: Double) in String(format: "%.1f s", value) }
        let cause: String
        if stalled >= lease {
            cause = "it was stopped or frozen (SIGSTOP, a suspended machine) for \(seconds(stalled)), and its last heartbeat was \(seconds(silent)) ago"
        } else if let failure {
            cause = "it could not reach the queue's database for \(seconds(silent)) (last error: \(failure))"
        } else {
            // Not frozen and no error: the heartbeats were sent on time and
            // answered, only too late for the database's clock.
            cause = "its heartbeats reached the database too late (the last one it acknowledged was \(seconds(silent)) ago; a slow or stalled connection, or a database too busy to answer in time)"
        }
        return "this worker lost its lease: \(cause), longer than its lease (--lease \(seconds(lease))), so the other workers declared it dead and took back its downloads; it placed no file once its lease was unsure and keeps none it cannot place safely: it stops now (exit 4), and the others fetch those downloads again and remove its part files"
    }

    func listenLoop() {
        while !state.withLock({ $0.stopping }) {
            do {
                try listenLink.run(patience: 1) { connection throws(PostgresError) in
                    if listenLink.reconnected || !listening {
                        try connection.listen(QueueSchema.workChannel)
                        listenLink.reconnected = false
                        listening = true
                    }
                    let job = String(queue.job)
                    let ended = job + QueueSchema.runEndedSuffix
                    while !state.withLock({ $0.stopping }) {
                        let received = try connection.notifications(waitingUpTo: 1)
                        // The claim loop's own notifications (its reports and
                        // slots given back) would only wake it for a cycle
                        // that finds nothing new; adds and others' wake it.
                        let own = loopSession.load(ordering: .relaxed)
                        noteHeldHosts(received, job: job)
                        applyPassedOn(received, job: job)
                        if received.contains(where: { $0.payload == job + QueueSchema.stopSuffix }) { stopWasAsked() }
                        if received.contains(where: { $0.payload == job + QueueSchema.cancelInfix + String(run) }) { cancelEverythingHeld() }
                        if let last = received.last(where: { [job + QueueSchema.pauseSuffix, job + QueueSchema.resumeSuffix].contains($0.payload) }) {
                            notePaused(last.payload == job + QueueSchema.pauseSuffix)
                        }
                        if received.contains(where: { $0.payload == ended }) {
                            // The run ended: look at it now, not at the next poll.
                            state.withLock { $0.lookWanted = true }
                            signal()
                        } else if received.contains(where: { $0.payload == job && $0.senderPID != own }) {
                            signal()
                        }
                    }
                }
            } catch {
                // The database is away: the claim loop's polling and the
                // heartbeat decide what happens; listen again later.
                listening = false
                usleep(1_000_000)
            }
        }
        listenLink.close()
    }

    /// A server's Retry-After that a worker's report turned into a hold of
    /// its host for the job (`QueueSchema.heldInfix`): this worker's
    /// claims held ahead take none of that host's slots over until it ends.
    /// They had started at once on the slots that their worker's transfers
    /// handed over, 24 requests in a 4 s hold from a worker with `-j 2`:
    /// the queue's `next_at` stops claims only. The hold is known a few
    /// milliseconds after the answer that asked for it (its report's commit).
    private func noteHeldHosts(_ received: [PostgresNotification], job: String) {
        let now = QueueClock.now()
        let holds = received.compactMap { QueueSchema.parseHeld($0.payload, job: job) }
        guard !holds.isEmpty else { return }
        state.withLock { state in
            for (host, seconds) in holds {
                state.heldUntil[host] = max(state.heldUntil[host] ?? 0, now + seconds)
            }
        }
    }

    /// Removes the part files of this job's workers that are not live any
    /// more (their claims went back to ready; they never resume elsewhere).
    /// Removes this worker's own part files: it is leaving, and a download
    /// of the queue never resumes from another claim's part file.
    func removeOwnParts() {
        let folder = root + "/" + partFolder
        let mine = ClaimedFiles.prefix(worker)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasPrefix(mine) {
            unlink(folder + "/" + name)
        }
    }

    func removeDeadWorkersParts() {
        guard let live = try? partsLink.withLock({ link throws(PostgresError) in
            try link.run(patience: 5) { connection throws(PostgresError) in try queue.liveWorkers(on: connection) }
        }) else { return }
        let folder = root + "/" + partFolder
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        for name in names {
            guard let owner = ClaimedFiles.worker(ofPart: name), !live.contains(owner) else { continue }
            unlink(folder + "/" + name)
        }
    }
}

extension QueueWorker {
    /// The line of a worker whose heartbeats have not reached its database
    /// for a third of its lease (each one tries again for that long): what
    /// goes on meanwhile and how long it waits.
    func awayMessage(away: Double, _ error: PostgresError) -> String {
        let lease = max(2, settings.lease)
        return "the shared queue at \(settings.address) does not answer (no heartbeat for \(String(format: "%.1f", away)) s; "
            + "last error: \(error.lastError ?? error.message)): transfers under way go on, but once \(String(format: "%.1f", lease - Self.margin(lease))) s "
            + "have passed without a heartbeat no file is placed and no request starts; it tries again for up to \(Int(settings.outage)) s, then exits 4"
    }

    /// The line of a worker whose database answered again after `away`
    /// seconds without an acknowledged heartbeat: its lease is its own again.
    func backMessage(away: Double) -> String {
        "the shared queue at \(settings.address) answers again after \(String(format: "%.1f", away)) s: "
            + "this worker's lease is renewed and it goes on with its downloads"
    }

    /// The line of a worker that gives up on its database after `away`
    /// seconds: the same from the heartbeat and from the claim loop.
    func outageMessage(away: Double, _ error: PostgresError) -> String {
        "cannot reach the shared queue at \(settings.address) for \(Int(away)) s (it waits \(Int(settings.outage)) s); "
            + "last error: \(error.lastError ?? error.message); part files are kept"
    }
}
