/// What one download moved in this run: when it started, the bytes it
/// received across attempts (the run's summary), and the last progress
/// report with its smoothed rate (the progress events).
struct JobProgress {
    /// Monotonic seconds when the first attempt started.
    private(set) var startedAt: Double?
    /// Body bytes received in this run, across attempts.
    private(set) var receivedThisRun: Int64 = 0
    /// The bytes and time of the last report (-1: none yet).
    private var reportedBytes: Int64 = -1
    private var reportedAt = 0.0
    /// Bytes per second, smoothed over the reports.
    private(set) var rate = 0.0

    /// The first attempt starts the download's clock; later ones keep it.
    mutating func starts(at now: Double) {
        if startedAt == nil { startedAt = now }
    }

    /// A transfer ended (whole, failed or aborted) after `bytes` of body.
    mutating func received(_ bytes: Int64) { receivedThisRun += bytes }

    /// The file holds `bytes` at `now`: false when that is what was last
    /// reported (nothing to report), else the rate moves towards the rate
    /// since the last report.
    mutating func report(_ bytes: Int64, at now: Double) -> Bool {
        guard bytes != reportedBytes else { return false }
        if reportedBytes >= 0 && now > reportedAt {
            let instant = Double(bytes - reportedBytes) / (now - reportedAt)
            rate = rate == 0 ? instant : rate * 0.7 + instant * 0.3
        }
        reportedBytes = bytes
        reportedAt = now
        return true
    }
}
