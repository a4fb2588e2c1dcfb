import Foundation

/// Decides whether and when a failed attempt is tried again.
struct RetryPolicy: Sendable {
    var retries: Int
    var base: Double
    var cap: Double

    /// The delay before attempt `attempt + 1`, or nil when no retry follows.
    /// `unit` is a random number in 0..<1 (injected so tests are exact).
    func delay(after error: DownloadError, attempt: Int, unit: Double) -> Double? {
        guard error.isRetryable, attempt <= retries else { return nil }
        // Exponential backoff with "equal jitter": half fixed, half random, so
        // many clients failing together do not come back together.
        let exponential = min(cap, base * pow(2, Double(max(0, attempt - 1))))
        let jittered = exponential / 2 + exponential / 2 * unit
        if let retryAfter = error.retryAfter {
            return max(jittered, min(cap, retryAfter))
        }
        return jittered
    }
}
