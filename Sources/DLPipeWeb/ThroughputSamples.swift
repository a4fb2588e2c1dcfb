/// The throughput chart's samples, one a second: the bytes the run received
/// over the last `span` seconds up to the sample (since the view's start
/// while it is younger), divided by that time. A rate over the time up to
/// the latest progress report instead (the terminal's speed) is taken over
/// a fraction of a second when a run begins: the first reports land just
/// after the first responses, and the first sample would read a multiple of
/// the real speed, then stay the chart's peak. Pure: the caller gives the
/// times, so that it is tested without a clock.
package struct ThroughputSamples: Sendable {
    /// Seconds each sample is averaged over.
    package let span: Double
    /// Samples kept for the chart, the latest ones.
    package let kept: Int
    /// The chart's points: seconds from the view's start, bytes per second.
    package private(set) var points: [(at: Double, speed: Double)] = []
    /// The received count at each sample of the last `span` seconds, and
    /// one before them (the window's start), oldest first.
    private var history: [(at: Double, received: Int64)]
    private let start: Double

    /// Samples of a view that started at `start`, when nothing was received.
    package init(start: Double, span: Double = 5, kept: Int = 300) {
        self.start = start
        self.span = span
        self.kept = kept
        history = [(start, 0)]
    }

    /// Takes the sample at `time`, when the run had received `received` bytes.
    package mutating func sample(received: Int64, at time: Double) {
        let last = history[history.count - 1]
        let time = max(time, last.at)
        history.append((time, max(received, last.received)))
        while history.count > 2 && history[1].at <= time - span { history.removeFirst() }
        let from = history[0], to = history[history.count - 1]
        let speed = to.at > from.at ? Double(to.received - from.received) / (to.at - from.at) : 0
        points.append((time - start, speed))
        if points.count > kept { points.removeFirst(points.count - kept) }
    }
}
