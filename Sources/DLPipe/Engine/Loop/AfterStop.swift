/// The engine loop's commands, queued for its thread; after the stop, what the
/// ended loop left for answering them.
struct Inbox {
    var commands: [EngineLoop.Command] = []
    /// Set once the loop has ended: commands are answered from it at once.
    var afterStop: AfterStop?
}

/// How a stopped engine answers: every call at once, none waits for a loop that
/// is gone. Downloads added after the stop end as `stopped` (they never start),
/// waits answer with the final counts or outcomes, and controls and hook replies
/// change nothing.
struct AfterStop {
    /// What the caller is told, run outside the inbox's lock.
    typealias Reply = @Sendable () -> Void

    /// The outcomes of downloads that ended before the stop (those that
    /// `keepsOutcomes` kept).
    let outcomes: [DownloadID: DownloadOutcome]
    /// Downloads open at the stop or added after it: their outcome is `stopped`.
    var stopped: Set<DownloadID>
    let summary: RunSummary
    let exitCode: Int?

    mutating func answer(_ command: EngineLoop.Command) -> Reply? {
        switch command {
        case .add(let admitted):
            stopped.insert(admitted.id)
            return nil
        case .addAll(let requests):
            for admitted in requests { stopped.insert(admitted.id) }
            return nil
        case .waitIdle(let reply), .countsNow(let reply):
            let (summary, exitCode) = (self.summary, self.exitCode)
            return { reply(summary, exitCode) }
        case .waitOutcome(let id, let reply):
            let outcome = stopped.contains(id) ? .stopped : outcomes[id]
            return { reply(outcome) }
        case .stop(let done):
            return done
        case .pause, .resume, .cancel, .participant, .fail, .responseVerdict, .finishedVerdict, .retryVerdict,
            .failureVerdict, .failureVerdictMissed, .requestVerdict, .drainedVerdict, .placedDone, .synced, .resumeHashed, .contentChecked, .holdStarts, .releaseStarts,
            .segmentsSynced:
            return nil
        }
    }
}
