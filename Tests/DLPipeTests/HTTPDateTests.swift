import Foundation
import Testing
@testable import DLPipe

/// IMF-fixdate is read by hand (no DateFormatter on the engine thread per
/// placed file): it must agree with the formatter it replaces, and leave every
/// other shape to it.
@Suite struct HTTPDateTests {
    static func byFormatter(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }

    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT", "Thu, 01 Jan 1970 00:00:00 GMT", "Tue, 29 Feb 2000 23:59:59 GMT",
        "Wed, 01 Mar 2000 00:00:00 GMT", "Fri, 31 Dec 1999 12:00:00 GMT", "Mon, 28 Feb 2100 06:30:00 GMT",
        "Tue, 19 Jan 2038 03:14:08 GMT", "Sat, 30 Nov 2026 21:30:00 GMT",
    ])
    func fixdateAgreesWithTheFormatter(_ text: String) throws {
        let expected = try #require(Self.byFormatter(text))
        #expect(HTTPDate.imfFixdate(Array(text.utf8)) == Int64(expected.timeIntervalSince1970))
        #expect(HTTPDate.parse(text) == expected)
    }

    @Test func otherShapesGoToTheFormatters() {
        #expect(HTTPDate.imfFixdate(Array("Sunday, 06-Nov-94 08:49:37 GMT".utf8)) == nil)
        #expect(HTTPDate.imfFixdate(Array("Sun Nov  6 08:49:37 1994".utf8)) == nil)
        #expect(HTTPDate.imfFixdate(Array("Sun, 06 Nov 1994 08:49:37 PST".utf8)) == nil)
        #expect(HTTPDate.imfFixdate(Array("Sun, 06 Xyz 1994 08:49:37 GMT".utf8)) == nil)
        #expect(HTTPDate.imfFixdate(Array("Sun, 06 Nov 1994 25:49:37 GMT".utf8)) == nil)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == Date(timeIntervalSince1970: 784_111_777))
        #expect(HTTPDate.parse("garbage") == nil)
    }

    /// A file's time as a conditional request sends it: IMF-fixdate, read
    /// back to the same second.
    @Test func aTimeIsWrittenAsAnIMFFixdate() {
        #expect(HTTPDate.format(seconds: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(seconds: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(seconds: 1_000_000_000) == "Sun, 09 Sep 2001 01:46:40 GMT")
        for seconds: Int64 in [1, 951_868_799, 4_107_542_400, 1_796_074_796] {
            #expect(HTTPDate.imfFixdate(Array(HTTPDate.format(seconds: seconds).utf8)) == seconds)
        }
    }
}
