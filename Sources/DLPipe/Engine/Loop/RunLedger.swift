/// The engine loop's run as a whole: its record, its counts and how the
/// downloads ended, the drain and the stop, and who waits for them.
/// Engine thread only.
final class RunLedger {
    /// The run's record in the state (0 without one).
    var runID: Int64 = 0
    var summary = RunSummary()
    var exitCode: Int?
    var openJobs = 0
    /// How each ended download ended; its `Job` is gone.
    var outcomes: [DownloadID: DownloadOutcome] = [:]
    /// Work arrived since the last drain: the next idle moment is a drain.
    var drainPending = false
    var askedDrainHook = false
    var drainedOnce = false
    var idleWaiters: [@Sendable (RunSummary, Int?) -> Void] = []
    var outcomeWaiters: [DownloadID: [@Sendable (DownloadOutcome?) -> Void]] = [:]
    var stopped = false
    var stopWaiters: [@Sendable () -> Void] = []
    /// Commands that came after the stop in the stop's own batch: answered as
    /// the stopped engine answers them (`AfterStop`), once the loop has ended.
    var lateCommands: [EngineLoop.Command] = []
    /// When `DLPIPE_TRACE_DRAIN` next writes the loop's state.
    var nextTrace = 0.0
}
