import Foundation
import Testing

@testable import DLPipe

/// The response judgement as a pure function: status, headers and what the
/// request asked for, no curl and no engine.
@Suite struct ResponseJudgementTests {
    let fresh = AskedFor(url: "http://h/f", retryAfterCap: 60)
    var resuming: AskedFor {
        var asked = fresh
        asked.resumeOffset = 100
        return asked
    }
    var conditional: AskedFor {
        var asked = fresh
        asked.conditional = true
        return asked
    }

    func judge(_ status: Int, _ headers: [String: String] = [:], length: Int64? = nil, to asked: AskedFor)
        -> ResponseJudgement
    {
        ResponseJudgement.judge(
            ResponseHead(status: status, headers: headers, contentLength: length), asked,
            now: Date(timeIntervalSince1970: 1_000_000_000))
    }

    @Test func aWholeBodyIsAcceptedWithItsValidatorAndType() {
        let verdict = judge(
            200, ["etag": "\"v1\"", "last-modified": "Sun, 09 Sep 2001 01:46:40 GMT", "content-type": "Text/HTML; charset=utf-8"],
            length: 10, to: fresh)
        #expect(verdict == .accept(AcceptedBody(length: 10, validator: "\"v1\"", type: "text/html")))
    }

    @Test func aWeakETagGivesWayToLastModified() {
        let verdict = judge(200, ["etag": "W/\"v1\"", "last-modified": "yesterday"], to: fresh)
        #expect(verdict == .accept(AcceptedBody(length: nil, validator: "yesterday", type: "")))
    }

    @Test func a206AtTheAskedOffsetResumesAndCountsTheWholeLength() {
        let verdict = judge(206, ["content-range": "bytes 100-149/150", "etag": "\"v\""], length: 50, to: resuming)
        #expect(verdict == .resume(AcceptedBody(length: 150, validator: "\"v\"", type: "")))
        let unknown = judge(206, ["content-range": "bytes 100-149/*"], to: resuming)
        #expect(unknown == .resume(AcceptedBody(length: nil, validator: nil, type: "")))
    }

    @Test func a206ElsewhereFailsAndDropsTheResume() {
        for range in ["bytes 0-49/150", "bytes 99-149/150", "garbage", nil] as [String?] {
            var headers: [String: String] = [:]
            headers["content-range"] = range
            guard case .fail(let error, let dropsResume) = judge(206, headers, length: 50, to: resuming) else {
                Issue.record("a 206 with \(range ?? "no range") to a resume at 100 was not refused")
                continue
            }
            #expect(dropsResume)
            #expect(error.kind == .network)
            #expect(error.message.contains("byte 100"))
        }
    }

    @Test func a200ToARangeRequestStartsOverFromByteZero() {
        // The server ignored the range, or If-Range found the resource changed.
        #expect(judge(200, length: 150, to: resuming) == .accept(AcceptedBody(length: 150, validator: nil, type: "")))
    }

    @Test func a416ToAResumeRestartsButToAFreshRequestFails() {
        #expect(judge(416, to: resuming) == .restart)
        guard case .fail(let error, false) = judge(416, to: fresh) else {
            Issue.record("a 416 to a request without Range was not a failure")
            return
        }
        #expect(error.status == 416)
    }

    @Test func a304IsUnchangedOnlyWhenTheRequestWasConditional() {
        #expect(judge(304, ["content-type": "image/png"], to: conditional) == .unchanged(type: "image/png"))
        #expect(judge(304, to: conditional) == .unchanged(type: ""))
        guard case .fail(let error, false) = judge(304, to: fresh) else {
            Issue.record("a 304 to a plain request was accepted")
            return
        }
        #expect(error.message.contains("not conditional"))
    }

    @Test func aRedirectNeedsALocation() {
        for status in [301, 302, 303, 307, 308] {
            #expect(judge(status, ["location": "/next"], to: fresh) == .redirect)
        }
        // Without a Location a 3xx is an answer, not a hop: a 300 without one
        // is a body like any other (curl reports no redirect URL).
        #expect(judge(300, length: 3, to: fresh) == .accept(AcceptedBody(length: 3, validator: nil, type: "")))
    }

    @Test func errorStatusesFailWithRetryAfterWithinTheCap() {
        guard case .fail(let error, false) = judge(503, ["retry-after": "7"], to: fresh) else {
            Issue.record("a 503 was not a failure")
            return
        }
        #expect(error.status == 503)
        #expect(error.retryAfter == 7)
        #expect(error.message == "HTTP 503 from http://h/f")
        guard case .fail(let far, false) = judge(429, ["retry-after": "3600"], to: fresh) else {
            Issue.record("a 429 was not a failure")
            return
        }
        #expect(far.retryAfter == 60, "capped at the backoff cap")
        #expect(far.message.contains("Retry-After asked for 3600s; capped at 60s"))
        guard case .fail(let informational, false) = judge(101, to: fresh) else {
            Issue.record("a final 1xx was not a failure")
            return
        }
        #expect(informational.retryAfter == nil)
    }

    @Test func credentialsInTheURLAreNotInTheMessage() {
        let asked = AskedFor(url: "http://user:secret@h/f", retryAfterCap: 60)
        guard case .fail(let error, _) = judge(500, to: asked) else {
            Issue.record("a 500 was not a failure")
            return
        }
        #expect(!error.message.contains("secret"))
    }
}
