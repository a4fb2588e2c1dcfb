/// What one download moved in this run: when it started, the bytes it
/// received across attempts (the run's summary), and the last progress
/// report with its smoothed rate (the progress events).
struct JobProgress {
    /// Monotonic seconds when the first attempt started.
    private(set) var startedAt: Double?
    /// Body bytes received in this run, across attempts.
    private(set) var receivedThisRun: Int64 = 0
    /// The bytes and time of the last report (-1: none since the response),
    /// and the bytes the response kept (a resume's).
    private var reportedBytes: Int64 = -1
    private var reportedAt = 0.0
    private var keptAtResponse: Int64 = 0
    /// Bytes per second, smoothed over the reports.
    private(set) var rate = 0.0

    /// A response starts the rate over from the bytes it kept, at its time:
    /// the first report of an attempt then has a rate (not 0 while bytes
    /// flow), and a retry that starts again from 0 never reads as a negative one.
    mutating func restarts(from kept: Int64, at now: Double) {
        reportedBytes = -1
        reportedAt = now
        keptAtResponse = kept
        rate = 0
    }

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
        let last = reportedBytes >= 0 ? reportedBytes : keptAtResponse
        if now > reportedAt && bytes >= last {
            let instant = Double(bytes - last) / (now - reportedAt)
            rate = rate == 0 ? instant : rate * 0.7 + instant * 0.3
        }
        reportedBytes = bytes
        reportedAt = now
        return true
    }
}
