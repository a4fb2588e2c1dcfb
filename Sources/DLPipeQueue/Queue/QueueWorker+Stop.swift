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

    /// Whether a stop was asked of this worker: read on the heartbeat's
    /// connection after its heartbeat.
    func stopIsAsked(on connection: PostgresConnection) throws(PostgresError) -> Bool {
        try connection.execute(
            "SELECT stop_asked_at IS NOT NULL AS asked FROM dlpipe.workers WHERE id = $1", [.int(worker)]
        ).rows.first?.bool("asked") ?? false
    }
}
