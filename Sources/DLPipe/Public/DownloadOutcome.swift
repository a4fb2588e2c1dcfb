/// How a download ended: the outcome of its terminal event.
public enum DownloadOutcome: Sendable, Hashable {
    /// The file is in place (`DownloadEvent.finished`).
    case finished(FinishedInfo)
    /// No more attempts (`DownloadEvent.failed`).
    case failed(DownloadError)
    /// Failed, and a `failed` hook dealt with it (`DownloadEvent.handled`).
    case handled(DownloadError)
    /// A hook skipped it, with its reason (`DownloadEvent.skipped`).
    case skipped(String)
    /// Cancelled by the caller or a hook; the part file is removed.
    case cancelled
    /// The engine stopped first: open at the stop, or added after it (such a
    /// download never starts). A part file stays.
    case stopped
}
