import DLPipe

/// Downloads a handler paused, in a worker of a shared queue.
///
/// Without a queue, an engine whose open downloads are all paused has
/// drained: `done` runs, and the paused downloads then fail "paused and
/// never resumed". In a worker the run's end is the queue's, and it waited
/// for every running row: a row paused in its engine stayed running, so the
/// run never ended and `done` never ran. Now the worker's rows are marked
/// paused in the queue when its engine drained with only paused downloads
/// left (`parkIfAllPaused`), and running again if a handler resumes one
/// in the engine (`notePause`, then the next cycle's `unpark`); one resumed
/// after its transfer ended goes back to the queue as any resumed claim
/// (`handBack`), under the same token.
extension QueueWorker {
    /// Download `number` was paused or resumed in the engine (engine thread).
    func notePause(_ number: Int, paused: Bool) {
        let id = Int64(number)
        let wake = state.withLock { state -> Bool in
            guard let wasParked = state.claims[id]?.pause.isParked else { return false }
            state.apply(paused ? .pause : .resume, to: id)
            // A resume of a parked claim: its row goes back to running.
            return paused || wasParked
        }
        if wake { signal() }
    }

    /// Whether every claim this worker holds is paused in its engine (none
    /// held counts too); those are then marked paused in the queue, so that
    /// the run's look may find the run idle. A claim is noted parked before
    /// its row is marked: a resume meanwhile finds it parked and marks it
    /// running again in the next cycle, after this.
    func parkIfAllPaused() throws(PostgresError) -> Bool {
        let toPark = state.withLock { state -> [(id: Int64, token: Int64)]? in
            guard state.claims.values.allSatisfy(\.pause.isPaused) else { return nil }
            let fresh = state.claims.filter { $0.value.pause.isPaused && !$0.value.pause.isParked }.keys.sorted()
            return fresh.compactMap { id in
                state.apply(.park, to: id)
                return state.token(id).map { (id, $0) }
            }
        }
        guard let toPark else { return false }
        if !toPark.isEmpty {
            _ = try loopLink.run(patience: settings.outage) { connection throws(PostgresError) in
                try queue.park(toPark, on: connection)
            }
        }
        return true
    }
}
