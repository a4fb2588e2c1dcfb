import Foundation

/// What a request asked for, as far as judging its response needs.
struct AskedFor: Equatable {
    /// The URL of this hop (named, redacted, in error messages).
    var url: String
    /// The Range start: bytes already on disk (0 for a whole-file request).
    var resumeOffset: Int64 = 0
    /// Whether the request carried If-None-Match / If-Modified-Since.
    var conditional = false
    /// The longest Retry-After the engine honours (its backoff cap).
    var retryAfterCap: Double
}

/// The head of a final response: its status, its headers (lower-case names,
/// repeats joined with ", ") and its Content-Length (nil when unknown).
struct ResponseHead: Equatable {
    var status: Int
    var headers: [String: String] = [:]
    var contentLength: Int64?
}

/// What a response's body is, once its head is judged.
struct AcceptedBody: Equatable {
    /// The length of the whole file (a resume's offset included), when known.
    var length: Int64?
    /// What a later resume of these bytes sends in `If-Range`.
    var validator: String?
    /// The media type (`MediaType.essence`), "" when none.
    var type: String
}

/// The verdict on a response head: HTTP semantics only, no I/O, no names, no
/// state (`readResponse` acts on it). Unit-tested without curl.
enum ResponseJudgement: Equatable {
    /// 304 to a conditional request: the file on disk is current. `type` is
    /// the one the 304 names, "" when it names none (RFC 9110 15.4.5).
    case unchanged(type: String)
    /// A 3xx with a Location: the engine follows it, the body is dropped.
    case redirect
    /// 416 to a resume: the part file is not a prefix the server recognises
    /// (or already all of it): start over from byte 0, in the same attempt.
    case restart
    /// The attempt fails; `dropsResume` when the bytes on disk must not be
    /// resumed again (a 206 that starts elsewhere).
    case fail(DownloadError, dropsResume: Bool)
    /// 206 starting where we asked: the body continues the part file.
    case resume(AcceptedBody)
    /// The whole file from byte 0 (a 2xx, or a 200 to a range request: the
    /// server ignored the range or the resource changed; never a mixed file).
    case accept(AcceptedBody)

    static func judge(_ head: ResponseHead, _ asked: AskedFor, now: Date = Date()) -> ResponseJudgement {
        let status = head.status
        let headers = head.headers
        if status == 304 {
            guard asked.conditional else {
                return .fail(DownloadError(.http, "HTTP 304 to a request that was not conditional", status: 304), dropsResume: false)
            }
            return .unchanged(type: MediaType.essence(headers["content-type"]))
        }
        if (300..<400).contains(status), headers["location"] != nil { return .redirect }
        if status == 416 && asked.resumeOffset > 0 { return .restart }
        if status >= 400 || status < 200 { return .fail(httpError(head, asked, now: now), dropsResume: false) }
        let body = AcceptedBody(
            length: head.contentLength,
            validator: Validator.forIfRange(etag: headers["etag"], lastModified: headers["last-modified"]),
            type: MediaType.essence(headers["content-type"]))
        guard asked.resumeOffset > 0, status == 206 else { return .accept(body) }
        guard ContentRange.start(headers["content-range"]) == asked.resumeOffset else {
            return .fail(
                DownloadError(.network, "the server sent a range that does not start at byte \(asked.resumeOffset)"),
                dropsResume: true)
        }
        var resumed = body
        resumed.length = head.contentLength.map { $0 + asked.resumeOffset }
        return .resume(resumed)
    }

    /// An error status, with the server's Retry-After kept up to the cap.
    private static func httpError(_ head: ResponseHead, _ asked: AskedFor, now: Date) -> DownloadError {
        let retryAfter = head.headers["retry-after"].flatMap { RetryAfter.seconds($0, now: now) }
        let cap = asked.retryAfterCap
        var message = "HTTP \(head.status) from \(RedactedURL.text(asked.url))"
        if let retryAfter, retryAfter > cap {
            // Say so: a user who sees "retrying in 5m" must know the server asked for more.
            let wanted = retryAfter.isFinite ? String(format: "%.0fs", retryAfter) : "more than any delay"
            message += " (Retry-After asked for \(wanted); capped at \(cap.secondsText)s)"
        }
        return DownloadError(.http, message, status: head.status, retryAfter: retryAfter.map { min($0, cap) })
    }
}
