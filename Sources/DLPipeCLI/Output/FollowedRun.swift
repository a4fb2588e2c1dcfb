import DLPipe
import DLPipeQueue

/// A run that a `--follow` worker was in ended, and the worker goes on:
/// what its output says then, as another worker says it when it exits (its
/// summary line, or `--json`'s `done` event, with the run's exit code).
struct FollowedRun: Sendable {
    let end: FollowedRunEnd
    /// This worker's counts since the previous run it was in ended (its
    /// start for the first), and the seconds from then.
    let own: RunSummary
    let worker: Int64

    /// The summary line, and the run it was for.
    var line: String {
        LineReporter.summaryLine(own) + "; run \(end.run) of the job ended, exit \(end.exitCode)"
    }
}

extension RunSummary {
    /// The counts from `earlier` to these (both since the engine started);
    /// the seconds are these.
    func since(_ earlier: RunSummary) -> RunSummary {
        var part = self
        part.finished -= earlier.finished
        part.failed -= earlier.failed
        part.handled -= earlier.handled
        part.skipped -= earlier.skipped
        part.cancelled -= earlier.cancelled
        part.unchanged -= earlier.unchanged
        part.verified -= earlier.verified
        part.replaced -= earlier.replaced
        part.bytes -= earlier.bytes
        return part
    }
}
