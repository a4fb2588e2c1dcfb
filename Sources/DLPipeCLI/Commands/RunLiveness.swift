import DLPipe

/// How a run recorded in the state ended, as `dlpipe status` says it: a run
/// with no end that does not hold the lock now was killed (kill -9, a crash, a
/// reboot, a second Ctrl-C): the kernel released its lock when it died.
enum RunLiveness: String {
    case ended, running, killed

    /// Each run's liveness, `runs` newest first; `holder` is the process that
    /// holds the run lock now. Only the newest run without an end can be the
    /// holder's: an older one with the same PID died and the PID was reused.
    static func of(_ runs: [RunRecord], holder: Int32?) -> [RunLiveness] {
        var holderSeen = false
        return runs.map { run in
            if run.endedAt != nil { return .ended }
            if !holderSeen, let holder, Int64(holder) == run.pid {
                holderSeen = true
                return .running
            }
            return .killed
        }
    }
}
