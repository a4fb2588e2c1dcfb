/// Bytes per second over a sliding window of recent time, from samples of a
/// byte count that only grows (a speed taken over the last redraw interval
/// alone reads 0 whenever no report landed in it, while bytes flowed).
///
/// The count is known only at the samples; between two samples its bytes are
/// spread evenly over the time between them. The window ends at the latest
/// sample while that is recent (reports come every `lag` seconds at most, so
/// the time since the last one holds bytes not reported yet), and `lag`
/// seconds before `now` after that, so that a stalled transfer slows down to
/// 0 instead of holding its last speed. The speed is 0 only when no byte came
/// in the whole window; nil while no byte came yet and the window has not
/// filled (no estimate, rather than a made-up 0).
package struct RateWindow: Sendable, Hashable {
    /// Seconds the speed is averaged over.
    package let span: Double
    /// Seconds a sample may be late (the engine's progress interval, and more).
    package let lag: Double
    private var times: [Double]
    private var counts: [Int64]

    /// A window whose count is `count` at `start` (the origin: a transfer's
    /// response, a run's start).
    package init(start: Double, count: Int64 = 0, span: Double = 5, lag: Double = 1) {
        self.span = span
        self.lag = lag
        times = [start]
        counts = [count]
    }

    /// Samples kept (for tests: old ones are dropped).
    var sampleCount: Int { times.count }

    /// The count now, the latest sample's.
    package var count: Int64 { counts[counts.count - 1] }

    /// Records the count at `time`. A count that goes down (a restart) or a
    /// time that goes back is taken as no change.
    package mutating func record(_ count: Int64, at time: Double) {
        let time = max(time, times[times.count - 1])
        let count = max(count, self.count)
        guard count != self.count else { return }
        times.append(time)
        counts.append(count)
        // Keep one sample at or before the earliest window start still possible.
        let earliest = time - span - lag
        var drop = 0
        while drop + 1 < times.count && times[drop + 1] <= earliest { drop += 1 }
        if drop > 0 {
            times.removeFirst(drop)
            counts.removeFirst(drop)
        }
    }

    /// Bytes per second at `now`, or nil when there is no estimate yet.
    package func rate(at now: Double) -> Double? {
        let last = times[times.count - 1]
        let end = max(last, now - lag)
        let start = max(end - span, times[0])
        guard end > start else { return nil }
        let moved = count - count(at: start)
        if moved == 0 && end - start < span { return nil }
        return Double(moved) / (end - start)
    }

    /// Seconds until `remaining` more bytes arrive at the speed at `now`; nil
    /// when the speed is unknown or 0 (no estimate rather than a made-up one).
    package func eta(remaining: Int64, at now: Double) -> Double? {
        guard let rate = rate(at: now), rate > 0 else { return nil }
        return Double(max(0, remaining)) / rate
    }

    /// The count at `time`, spread evenly between the samples around it.
    private func count(at time: Double) -> Int64 {
        guard time > times[0] else { return counts[0] }
        var index = times.count - 1
        while index > 0 && times[index - 1] >= time { index -= 1 }
        // times[index - 1] < time <= times[index] (or time is past the last sample).
        guard time < times[index] else { return counts[index] }
        let before = times[index - 1]
        let fraction = (time - before) / (times[index] - before)
        return counts[index - 1] + Int64((Double(counts[index] - counts[index - 1]) * fraction).rounded(.down))
    }
}
