import DLPipe
import Dispatch

/// A drained worker's look at the job's run: whether it ended, `done` run
/// by the worker that takes it, and a `--follow` worker's next run.
extension QueueWorker {
    /// Whether a drained worker looks at the run in this turn of its loop.
    /// Not at every wake: each report of every worker sends a NOTIFY, and a
    /// look at each of them (with 4 workers, 719 looks in a run of 10,000
    /// files) only finds the run busy again. It looks when something it
    /// waits on changed: its engine just drained, it just reported ends (the
    /// last ones of the run may be its own), the run ended (a NOTIFY says so),
    /// or a poll interval passed since its last look (a settle time running
    /// out, another worker that died).
    func lookIsDue(reported: Bool) -> Bool {
        // 0.9: the loop sleeps a poll interval at most, so the look a poll
        // ago is a little less than one interval old when the poll wakes it.
        state.withLock { state in
            reported || state.lookWanted || QueueClock.now() - state.lastLook >= Self.pollInterval * 0.9
        }
    }

    /// The local engine drained and nothing was claimed: is the run over?
    /// True when this worker answered the engine with the run's exit code.
    func lookAtRun() throws(PostgresError) -> Bool {
        state.withLock { state in
            state.lookWanted = false
            state.lastLook = QueueClock.now()
        }
        let look = try loopLink.run(patience: settings.outage) { connection throws(PostgresError) in
            // A cancelled run's work that came back ready ends cancelled first.
            try queue.sweepCancelled(run: run, on: connection)
            return try queue.look(run: run, settle: settings.settle, on: connection)
        }
        if look.ended {
            if settings.follow {
                noteFollowedEnd(FollowedRunEnd(run: run, exitCode: look.exitCode ?? 0, job: nil))
                return try followNextRun()
            }
            answerDrain(look.exitCode ?? 0)
            return true
        }
        guard !look.busy, look.settled else { return false }
        guard let summary = try loopLink.run(patience: settings.outage, { connection throws(PostgresError) in
            try queue.takeDone(run: run, worker: worker, settle: settings.settle, on: connection)
        }) else { return false }
        // This worker runs the job's `done`, with the counts of every worker.
        var code: Int?
        state.withLock { $0.resumesPassedOn = 0 }
        if let doneHook {
            let answered = DispatchSemaphore(value: 0)
            let box = CodeBox()
            doneHook(summary) { reply in
                box.set(reply)
                answered.signal()
            }
            answered.wait()
            code = box.get()
        }
        if doneHook != nil { try reportWhatDoneResumed() }
        let after = try loopLink.run(patience: settings.outage) { connection throws(PostgresError) in
            try queue.look(run: run, settle: 0, on: connection)
        }
        // A resume `done` passed on to another worker: its holder reports
        // it a moment later; the run goes on until then (at worst `done`
        // runs again first, if the next look still finds the run idle).
        let passedOn = state.withLock { $0.resumesPassedOn } > 0
        if after.busy || passedOn {
            // `done` added or resumed downloads: the run goes on, and `done`
            // comes again at its next idle.
            try loopLink.run(patience: settings.outage) { connection throws(PostgresError) in
                try queue.releaseDone(run: run, on: connection)
            }
            return false
        }
        var exitCode = code ?? (summary.failed > 0 ? 1 : 0)
        if code == nil && exitCode == 0 {
            let paused = try loopLink.run(patience: settings.outage) { connection throws(PostgresError) in
                try queue.hasPaused(on: connection)
            }
            if paused { exitCode = 1 }
        }
        try loopLink.run(patience: settings.outage) { connection throws(PostgresError) in
            try queue.endRun(run, exitCode: exitCode, on: connection)
        }
        removeDeadWorkersParts()
        if settings.follow {
            noteFollowedEnd(FollowedRunEnd(run: run, exitCode: exitCode, job: summary))
            return try followNextRun()
        }
        ranDone.withLock { $0 = (run, summary) }
        answerDrain(exitCode)
        return true
    }

    /// Reports what the resumes of `done`'s handlers did, before the look
    /// after `done`: a paused download resumed there goes back to the queue
    /// as ready (or shows running again, if it never transferred) only once
    /// the engine took the resume and the worker reported it. The look had
    /// come first, found the run idle and ended it, and the row stayed ready
    /// past its run (the next run fetched it). The engine takes commands in
    /// order, so its answer to one sent now comes after theirs.
    private func reportWhatDoneResumed() throws(PostgresError) {
        guard let engine = engineBox.withLock({ $0 }) else { return }
        let taken = DispatchSemaphore(value: 0)
        engine.countsNow { _ in taken.signal() }
        taken.wait()
        // An end gives its own slot back (`letGo` took it off the slots to give).
        let (ends, unparks) = state.withLock { state in
            (state.ends.take(), state.takeUnparking())
        }
        guard !(ends.isEmpty && unparks.isEmpty) else { return }
        try loopLink.run(patience: settings.outage) { connection throws(PostgresError) in
            try connection.transaction { () throws(PostgresError) in
                _ = try queue.unpark(unparks, on: connection)
                try report(ends, on: connection)
            }
        }
    }

    /// A `--follow` worker whose run ended: it joins the job's next run once
    /// one is open (another worker started one, or work was queued), and
    /// goes on claiming meanwhile. False: the claim loop goes on.
    func followNextRun() throws(PostgresError) -> Bool {
        let next = try loopLink.run(patience: settings.outage) { connection throws(PostgresError) -> Int64? in
            try connection.execute(
                "SELECT id FROM dlpipe.runs WHERE job_id = $1 AND ended_at IS NULL", [.int(queue.job)]
            ).rows.first?.int("id")
        }
        if next == nil, let missed = try missedRun() {
            // A run opened and ended while this worker claimed nothing of it
            // and did not look (a cron worker's run of a second or two, on a
            // loaded machine): it was there for it all the same, and says
            // that it ended, as for the runs it joined.
            runBox.withLock { $0 = missed.run }
            noteFollowedEnd(missed)
        }
        followsEndedRun.withLock { $0 = next == nil || next == run }
        if let next, next == run {
            // The run this worker was told had ended is open again (`dlpipe
            // queue retry --failed` reopened it): its next end is told too.
            endedRunTold.withLock { told in if told == next { told = next - 1 } }
        }
        if let next, next != run {
            runBox.withLock { $0 = next }
            _ = try? loopLink.run(patience: settings.outage) { connection throws(PostgresError) in
                try connection.execute("UPDATE dlpipe.workers SET run_id = $1 WHERE id = $2", [.int(next), .int(worker)])
            }
        }
        return false
    }

    /// The job's last run after this worker's, when it has ended.
    private func missedRun() throws(PostgresError) -> FollowedRunEnd? {
        let current = run
        return try loopLink.run(patience: settings.outage) { connection throws(PostgresError) -> FollowedRunEnd? in
            guard let row = try connection.execute(
                """
                SELECT id, exit_code FROM dlpipe.runs WHERE job_id = $1 AND id > $2 AND ended_at IS NOT NULL
                ORDER BY id DESC LIMIT 1
                """, [.int(queue.job), .int(current)]
            ).rows.first else { return nil }
            return FollowedRunEnd(run: try row.int("id"), exitCode: Int(try row.optionalInt("exit_code") ?? 0), job: nil)
        }
    }

    /// Tells a `--follow` worker's caller that its run ended, once a run.
    private func noteFollowedEnd(_ end: FollowedRunEnd) {
        let fresh = endedRunTold.withLock { told -> Bool in
            defer { told = max(told, end.run) }
            return end.run > told
        }
        if fresh { onRunEnded?(end) }
    }

    func answerDrain(_ code: Int?) {
        drain.answer(code)
    }
}

/// A `done` reply handed from the Lua thread to the claim loop.
private final class CodeBox: @unchecked Sendable {
    // @unchecked: written before the semaphore's signal, read after its wait.
    private var code: Int?
    func set(_ value: Int?) { code = value }
    func get() -> Int? { code }
}
