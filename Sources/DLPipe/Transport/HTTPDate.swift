import Foundation

/// The three date formats HTTP allows (IMF-fixdate, RFC 850, asctime).
enum HTTPDate {
    private static let formats = [
        "EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy",
    ]

    /// The date, or nil when no format fits.
    static func parse(_ text: String) -> Date? {
        // Servers send IMF-fixdate; it is read by hand: a DateFormatter costs
        // about 100 µs to make, and every placed file's Last-Modified (its
        // mtime) is read on the engine thread (1,000 small files were 0.5 s
        // slower with formatters alone).
        if let seconds = imfFixdate(Array(text.utf8)) { return Date(timeIntervalSince1970: Double(seconds)) }
        for format in formats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    /// `seconds` since 1970 as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`):
    /// what a conditional request sends for a file's modification time.
    static func format(seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        // tm_wday counts from Sunday; `weekdays` from Monday.
        let day = String(decoding: weekdays[Int((parts.tm_wday + 6) % 7)], as: UTF8.self)
        let month = String(decoding: months[Int(parts.tm_mon)], as: UTF8.self)
        var year = String(parts.tm_year + 1900)
        while year.count < 4 { year = "0" + year }
        return "\(day), \(two(parts.tm_mday)) \(month) \(year) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        .map { Array($0.utf8) }
    private static let weekdays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].map { Array($0.utf8) }

    /// Seconds since 1970 of `Sun, 06 Nov 1994 08:49:37 GMT` (RFC 9110 5.6.7),
    /// exactly that shape; nil for anything else (the formatters then try).
    static func imfFixdate(_ b: [UInt8]) -> Int64? {
        guard b.count == 29, b[3] == 0x2C, b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20,
            b[19] == 0x3A, b[22] == 0x3A, b[25] == 0x20, Array(b[26...]) == Array("GMT".utf8),
            weekdays.contains(Array(b[0..<3])),
            let month = months.firstIndex(of: Array(b[8..<11])),
            let day = number(b, 5, 2), let year = number(b, 12, 4),
            let hour = number(b, 17, 2), let minute = number(b, 20, 2), let second = number(b, 23, 2),
            (1...31).contains(day), hour < 24, minute < 60, second <= 60
        else { return nil }
        // Days from the civil date (Howard Hinnant's algorithm), March-based years.
        let y = Int64(month < 2 ? year - 1 : year)
        let m = Int64(month + 1)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return days * 86_400 + Int64(hour) * 3600 + Int64(minute) * 60 + Int64(second)
    }

    private static func number(_ b: [UInt8], _ start: Int, _ count: Int) -> Int? {
        var value = 0
        for byte in b[start..<(start + count)] {
            guard (0x30...0x39).contains(byte) else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
    }
}
