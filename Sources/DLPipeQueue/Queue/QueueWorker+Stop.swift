import DLPipe

/// `dlpipe queue stop`: the job's workers, on every machine, leave as on
/// SIGTERM, asked through the database. The listener hears the NOTIFY at
/// once; the heartbeat reads the mark on the worker's row, for a worker
/// whose listener was reconnecting when the NOTIFY went out.
extension QueueWorker {
    /// `body` runs once, on the worker's listener or heartbeat thread, when
    /// the job's control plane asks this worker to stop. The command line
    /// stops as on SIGTERM there.
    package func whenStopAsked(_ body: @escaping @Sendable () -> Void) {
        stopHandler.withLock { $0 = body }
    }

    /// Runs the stop's handler, once.
    func stopWasAsked() {
        let handler = stopHandler.withLock { $0.take() }
        handler?()
    }

    /// Whether a stop was asked of this worker, whether its run was
    /// cancelled and whether its job is paused: read on the heartbeat's
    /// connection after its heartbeat.
    func controlsAsked(on connection: PostgresConnection) throws(PostgresError) -> (stop: Bool, cancel: Bool, paused: Bool) {
        guard let row = try connection.execute(
            """
            SELECT w.stop_asked_at IS NOT NULL AS stop, EXISTS (
              SELECT 1 FROM dlpipe.runs r WHERE r.id = $2 AND r.ended_at IS NULL AND r.cancel_asked_at IS NOT NULL) AS cancel,
              EXISTS (SELECT 1 FROM dlpipe.jobs j WHERE j.id = w.job_id AND j.paused_at IS NOT NULL) AS paused
            FROM dlpipe.workers w WHERE w.id = $1
            """, [.int(worker), .int(run)]
        ).rows.first else { return (false, false, false) }
        return (try row.bool("stop"), try row.bool("cancel"), try row.bool("paused"))
    }

    /// After an acknowledged heartbeat: a stop or a cancel asked, and the
    /// job's pause, for a worker whose listener missed their NOTIFY (or
    /// that started into a pause).
    func actOnControls(on connection: PostgresConnection) throws(PostgresError) {
        let heard = pauseNotificationsHeard
        let asked = try controlsAsked(on: connection)
        if asked.stop { stopWasAsked() }
        if asked.cancel { cancelEverythingHeld() }
        notePaused(asked.paused, heardBefore: heard)
    }

    /// `body` is told, on the heartbeat's or the listener's thread, when
    /// the job is paused (`dlpipe queue pause`: true) and when it is
    /// resumed (false): once each, the first time only when it is paused.
    package func whenJobPauseChanges(_ body: @escaping @Sendable (Bool) -> Void) {
        pauseHandler.withLock { $0.handler = body }
    }

    /// The NOTIFYs of a pause or resume heard so far: a heartbeat's reading
    /// taken before one of them is older than what the listener told.
    var pauseNotificationsHeard: Int { pauseHandler.withLock { $0.heard } }

    /// The job's pause as last read; tells the handler when it changed.
    /// `heardBefore`: a heartbeat's reading, dropped when a NOTIFY came
    /// since it was taken. Nil: the listener's, from a NOTIFY.
    func notePaused(_ paused: Bool, heardBefore: Int? = nil) {
        let handler = pauseHandler.withLock { state -> (@Sendable (Bool) -> Void)? in
            if let heardBefore {
                guard heardBefore == state.heard else { return nil }
            } else {
                state.heard += 1
            }
            guard state.told != paused else { return nil }
            state.told = paused
            return state.handler
        }
        handler?(paused)
    }

    /// `dlpipe queue cancel` of this worker's run: every download it holds
    /// (in its engine, held ahead, on its way in, handed back for a retry)
    /// ends cancelled, as a handler's `dl.cancel` ends it; the engine
    /// prints and counts each. On the listener's or the heartbeat's thread.
    func cancelEverythingHeld() {
        guard let engine = engineBox.withLock({ $0 }) else { return }
        let held = state.withLock { state in
            Array(state.claims.keys) + state.ends.filter { if case .retry = $0.outcome { true } else { false } }.map(\.id)
        }
        for id in held {
            if let download = engine.downloadID(number: Int(id)) { engine.cancel(download) }
        }
        state.withLock { $0.lookWanted = true }
        signal()
    }
}
