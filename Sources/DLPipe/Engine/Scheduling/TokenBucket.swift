/// A token bucket of bytes: `rate` bytes per second flow in, up to `burst`.
/// Spending may take it below zero (a chunk is taken whole once any token is
/// there), and the debt is paid back before anything else is received: the
/// bytes taken by time t never exceed `burst + rate * t` plus one chunk per
/// receiver that was let in while tokens were left. Pure arithmetic on a clock
/// the caller passes, so it is tested without waiting.
struct TokenBucket {
    /// Bytes per second.
    let rate: Double
    /// The most tokens that pile up while nothing is received.
    let burst: Double
    private(set) var tokens: Double
    private var updatedAt: Double

    /// A full bucket at `now`. The burst is a tenth of a second of the rate:
    /// enough to let a chunk through at once, too little to show in a run's
    /// average.
    init(rate: Int, now: Double) {
        self.rate = Double(max(1, rate))
        burst = max(1, self.rate / 10)
        tokens = burst
        updatedAt = now
    }

    /// Adds what flowed in since the last refill.
    mutating func refill(now: Double) {
        guard now > updatedAt else { return }
        tokens = min(burst, tokens + (now - updatedAt) * rate)
        updatedAt = now
    }

    /// Whether something may be received now (after a refill).
    var hasTokens: Bool { tokens > 0 }

    /// Takes `bytes` that were received.
    mutating func spend(_ bytes: Int) { tokens -= Double(bytes) }

    /// Seconds from `now` until tokens are there again (0 when they are).
    func secondsUntilTokens(now: Double) -> Double {
        guard tokens <= 0 else { return 0 }
        return max(0, (1 - tokens) / rate - max(0, now - updatedAt))
    }
}
