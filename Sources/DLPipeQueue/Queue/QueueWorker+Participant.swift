import DLPipe

/// What the engine tells this worker of its downloads' turns, on the engine
/// thread (`QueueParticipant`); the adds and cancels are in QueueWorker.swift
/// and QueueWorker+Cancel.swift.
extension QueueWorker {
    package var files: ClaimedFiles { ClaimedFiles(folder: partFolder, worker: worker) }

    package func mayPlace() -> Bool { leaseIsSure() }

    /// No round trip per request: the local clock since the last
    /// acknowledged heartbeat, as for placing a file.
    package func mayStart() -> Bool { leaseIsSure() }

    package func handBack(_ number: Int, after delay: Double, _ error: DownloadError?, request: DownloadRequest, attempts: Int) {
        noteRetry(number, after: delay, error, request: request, attempts: attempts)
    }

    package func transferEnded(_ number: Int) { noteTransferEnded(number) }

    package func pauseChanged(_ number: Int, paused: Bool) { notePause(number, paused: paused) }

    package func hostHeld(_ number: Int, host: String, seconds: Double) { noteOwnHold(number, host: host, seconds: seconds) }
}
