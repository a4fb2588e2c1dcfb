import Foundation

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
