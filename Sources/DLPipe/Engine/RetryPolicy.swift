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

/// Parses `Retry-After`: delta-seconds or an HTTP date (RFC 9110 10.2.3).
enum RetryAfter {
    /// Seconds to wait from `now`, or nil when the value is unreadable.
    static func seconds(_ value: String, now: Date = Date()) -> Double? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed) { return Double(max(0, seconds)) }
        // More digits than an Int holds is still a (very long) delay, not garbage:
        // without this a server could dodge the cap by asking for too much.
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ (0x30...0x39).contains($0) }) { return .infinity }
        guard let date = HTTPDate.parse(trimmed) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }
}

/// The three date formats HTTP allows (IMF-fixdate, RFC 850, asctime).
enum HTTPDate {
    private static let formats = [
        "EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy",
    ]

    /// The date, or nil when no format fits.
    static func parse(_ text: String) -> Date? {
        for format in formats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
