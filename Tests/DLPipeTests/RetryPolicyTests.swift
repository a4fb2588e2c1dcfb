import Foundation
import Testing

@testable import DLPipe

@Suite struct RetryPolicyTests {
    let policy = RetryPolicy(retries: 3, base: 1, cap: 60)

    @Test func backoffDoublesWithJitterInsideItsBand() {
        let network = DownloadError(.network, "reset")
        for attempt in 1...3 {
            let full = pow(2, Double(attempt - 1))
            #expect(policy.delay(after: network, attempt: attempt, unit: 0) == full / 2)
            #expect(policy.delay(after: network, attempt: attempt, unit: 0.999)! < full)
        }
        #expect(policy.delay(after: network, attempt: 4, unit: 0) == nil, "the budget is spent")
    }

    @Test func whatIsRetried() {
        for status in [408, 429, 500, 502, 503, 504] {
            #expect(policy.delay(after: DownloadError(.http, "", status: status), attempt: 1, unit: 0) != nil)
        }
        for status in [400, 401, 403, 404, 410, 416] {
            #expect(policy.delay(after: DownloadError(.http, "", status: status), attempt: 1, unit: 0) == nil)
        }
        for kind in [DownloadError.Kind.checksum, .io, .hook, .cancelled, .tls, .proxy] {
            #expect(policy.delay(after: DownloadError(kind, ""), attempt: 1, unit: 0) == nil)
        }
        // A proxy that answers 407 or 403 will answer it again; its 5xx may pass.
        for status in [403, 407] {
            #expect(policy.delay(after: DownloadError(.proxy, "", status: status), attempt: 1, unit: 0) == nil)
        }
        for status in [408, 429, 502, 503] {
            #expect(policy.delay(after: DownloadError(.proxy, "", status: status), attempt: 1, unit: 0) != nil)
        }
        #expect(policy.delay(after: DownloadError(.timeout, ""), attempt: 1, unit: 0) != nil)
    }

    @Test func retryAfterIsHonouredAndCapped() {
        let soon = DownloadError(.http, "", status: 503, retryAfter: 7)
        #expect(policy.delay(after: soon, attempt: 1, unit: 0) == 7)
        let far = DownloadError(.http, "", status: 503, retryAfter: 86_400)
        #expect(policy.delay(after: far, attempt: 1, unit: 0) == 60)
    }

    @Test func retryAfterFormats() {
        let now = Date(timeIntervalSince1970: 1_000_000_000)  // Sun, 09 Sep 2001 01:46:40 GMT
        #expect(RetryAfter.seconds("120", now: now) == 120)
        #expect(RetryAfter.seconds(" 5 ", now: now) == 5)
        #expect(RetryAfter.seconds("Sun, 09 Sep 2001 01:47:40 GMT", now: now) == 60)
        #expect(RetryAfter.seconds("Sunday, 09-Sep-01 01:48:40 GMT", now: now) == 120)
        #expect(RetryAfter.seconds("Sun Sep  9 01:46:50 2001", now: now) == 10)
        #expect(RetryAfter.seconds("Sun, 09 Sep 2001 01:00:00 GMT", now: now) == 0, "a past date is now")
        #expect(RetryAfter.seconds("soon", now: now) == nil)
    }

    /// A server cannot dodge the cap with more digits than an Int holds.
    @Test func retryAfterBeyondAnIntIsStillCapped() {
        let now = Date(timeIntervalSince1970: 1_000_000_000)
        #expect(RetryAfter.seconds("99999999999999999999999", now: now) == .infinity)
        #expect((RetryAfter.seconds("Fri, 01 Jan 2100 00:00:00 GMT", now: now) ?? 0) > 3e9)
        let endless = DownloadError(.http, "", status: 503, retryAfter: .infinity)
        #expect(policy.delay(after: endless, attempt: 1, unit: 0) == 60)
    }
}
