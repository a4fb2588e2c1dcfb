import DLPipe
import Synchronization

/// The run's warnings (`RunSummary.warnings`) that a reporter has not
/// printed yet: every drain's summary holds all of them so far, and each is
/// printed once, at the drain that first has it, with `-q` too.
final class RunWarnings: Sendable {
    private let printed = Mutex(0)

    /// The warnings of a `drained` event not printed before, as lines.
    func newLines(in event: DownloadEvent) -> [String] {
        guard case .drained(let summary) = event else { return [] }
        return printed.withLock { count in
            defer { count = max(count, summary.warnings.count) }
            return summary.warnings.dropFirst(count).map { "dlpipe: warning: " + Terminal.clean($0) }
        }
    }

    /// The same, as JSON Lines `warning` events (without `id`: about the run).
    func newJSON(in event: DownloadEvent) -> [String] {
        guard case .drained(let summary) = event else { return [] }
        return printed.withLock { count in
            defer { count = max(count, summary.warnings.count) }
            return summary.warnings.dropFirst(count).map(JSONLine.warning)
        }
    }
}
