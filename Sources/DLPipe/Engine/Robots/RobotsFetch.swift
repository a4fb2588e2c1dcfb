internal import CCurl
import Foundation

/// One host's robots.txt on its way: a curl handle of its own on the engine's
/// multi handle (no transfer slot, no part file), its body kept in memory up
/// to `RobotsRules.parseLimit`, and the final response's validators.
final class RobotsFetch {
    /// `scheme://host:port` whose file this is.
    let origin: String
    let host: String
    let easy = CurlEasy()
    let startedAt = EngineLoop.now()
    /// What the state kept from an earlier run: asked for conditionally.
    let stored: StoredRobots?
    private(set) var body: [UInt8] = []
    /// The body went past the parse limit: the rest was not read.
    private(set) var truncated = false
    private(set) var etag: String?
    private(set) var lastModified: String?
    /// `--record`: the final response goes into the recording like a download's.
    var recording: ResponseRecording?

    /// The URL of the origin's robots.txt.
    var url: String { origin + "/robots.txt" }

    init(origin: String, host: String, stored: StoredRobots?) {
        self.origin = origin
        self.host = host
        self.stored = stored
    }

    /// Sets up the request: redirects followed by curl, at most five (RFC 9309 2.3.1.2),
    /// http and https only.
    func configure(userAgent: String, timeout: Double, options: TransferOptions, replay: ReplayServer?) {
        easy.set(CURLOPT_URL, url)
        easy.set(CURLOPT_NOSIGNAL, 1)
        easy.set(CURLOPT_FOLLOWLOCATION, 1)
        easy.set(CURLOPT_MAXREDIRS, 5)
        easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        easy.set(CURLOPT_USERAGENT, userAgent)
        easy.set(CURLOPT_ACCEPT_ENCODING, "")
        // No progress for `timeout` seconds fails it, as it does a download.
        easy.set(CURLOPT_CONNECTTIMEOUT_MS, Int(timeout * 1000))
        easy.set(CURLOPT_LOW_SPEED_LIMIT, 1)
        easy.set(CURLOPT_LOW_SPEED_TIME, max(1, Int(timeout.rounded(.up))))
        options.apply(to: easy, url: url, firstHost: host)
        var lines: [String] = []
        if let replay {
            // The recording answers for the URL, as it does for downloads (ReplayServer).
            easy.set(CURLOPT_URL, replay.address)
            easy.set(CURLOPT_PROXY, "")
            lines.append("\(ReplayServer.urlHeader): \(RedactedURL.text(url))")
        }
        if let stored, stored.hasValidators {
            if let etag = stored.etag { lines.append("If-None-Match: \(etag)") }
            if let date = stored.lastModified { lines.append("If-Modified-Since: \(date)") }
        }
        easy.setHeaders(lines)
        let context = Unmanaged.passUnretained(self).toOpaque()
        easy.set(CURLOPT_WRITEFUNCTION, callback: robotsWrite)
        easy.set(CURLOPT_WRITEDATA, pointer: context)
        easy.set(CURLOPT_HEADERFUNCTION, callback: robotsHeader)
        easy.set(CURLOPT_HEADERDATA, pointer: context)
    }

    /// The answer as the state keeps it (RFC 9309 2.3.1): a 2xx body is
    /// parsed, a 304 keeps the stored file, 4xx (but 429) allows everything,
    /// and 5xx, 429 or no answer at all disallows everything.
    func outcome(code: Int) -> StoredRobots {
        recording?.finish(code == Int(CURLE_OK.rawValue) ? .whole : truncated ? .stopped : .broken)
        let status = easy.long(CURLINFO_RESPONSE_CODE)
        let read = code == Int(CURLE_OK.rawValue) || (truncated && code == Int(CURLE_WRITE_ERROR.rawValue))
        if code == Int(CURLE_TOO_MANY_REDIRECTS.rawValue) { return StoredRobots(verdict: .allow) }
        guard read else { return StoredRobots(unreachable: Self.cause(of: CURLcode(UInt32(code)), easy)) }
        switch status {
        case 200..<300:
            return StoredRobots(verdict: .body, body: Data(body), etag: etag, lastModified: lastModified)
        case 304:
            return stored ?? StoredRobots(verdict: .allow)
        case 429, 500...:
            return StoredRobots(unreachable: "HTTP \(status)")
        default:
            // 4xx; a 3xx left over (a redirect without Location) or a 1xx: unavailable.
            return StoredRobots(verdict: .allow)
        }
    }

    /// Why no answer came, in a few words: "connection refused", "timed out".
    private static func cause(of code: CURLcode, _ easy: CurlEasy) -> String {
        switch code {
        case CURLE_COULDNT_CONNECT where easy.long(CURLINFO_OS_ERRNO) == Int(ECONNREFUSED):
            return "connection refused"
        case CURLE_OPERATION_TIMEDOUT:
            return "timed out"
        case CURLE_COULDNT_RESOLVE_HOST:
            return "host not found"
        default:
            return easy.errorText ?? String(cString: curl_easy_strerror(code))
        }
    }

    fileprivate func write(_ data: UnsafeRawBufferPointer) -> Bool {
        let room = RobotsRules.parseLimit - body.count
        body.append(contentsOf: data.prefix(room))
        recording?.body(UnsafeRawBufferPointer(rebasing: data.prefix(room)))
        if data.count > room {
            truncated = true
            return false
        }
        return true
    }

    fileprivate func header(_ data: UnsafeRawBufferPointer) {
        recording?.header(data)
        let line = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if line.hasPrefix("HTTP/") {
            // A new response (a redirect's next hop): only the last one's validators count.
            etag = nil
            lastModified = nil
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].lowercased()
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        guard !value.isEmpty, value.utf8.count <= 1024 else { return }
        if name == "etag" { etag = value }
        if name == "last-modified" { lastModified = value }
    }
}

/// A robots.txt as the state keeps it: its body and validators, or the
/// verdict of an answer without one; in a shared queue, the run it was
/// fetched in, so that the other workers of that run take it as it is.
struct StoredRobots: Codable, Equatable {
    enum Verdict: String, Codable {
        case body, allow, disallow
    }

    var verdict: Verdict
    var body: Data?
    var etag: String?
    var lastModified: String?
    var run: Int64?
    /// Why the file could not be read ("HTTP 503", "connection refused"):
    /// everything is disallowed (RFC 9309 2.3.1.4).
    var unreachable: String?

    enum CodingKeys: String, CodingKey {
        case verdict, body, etag, run, unreachable
        case lastModified = "last_modified"
    }

    init(unreachable cause: String) {
        self.init(verdict: .disallow)
        unreachable = cause
    }

    init(verdict: Verdict, body: Data? = nil, etag: String? = nil, lastModified: String? = nil) {
        self.verdict = verdict
        self.body = body
        self.etag = etag
        self.lastModified = lastModified
    }

    var rules: RobotsRules {
        switch verdict {
        case .body: RobotsRules(parsing: body ?? Data())
        case .allow: .allowAll
        case .disallow: .disallowAll
        }
    }

    /// Whether a new request may ask conditionally for this copy.
    var hasValidators: Bool { verdict == .body && (etag != nil || lastModified != nil) }

    /// The state's key for an origin's robots.txt: in the `dl.store` table
    /// under a prefix no job's key has (`JobStore` keys start with U+001F).
    static func stateKey(_ origin: String) -> String { "\u{1E}robots\u{1E}" + origin }
    /// The key whose value names the run whose worker fetches the origin's file.
    static func claimKey(_ origin: String) -> String { "\u{1E}robots-fetch\u{1E}" + origin }

    static func decode(_ json: String) -> StoredRobots? {
        try? JSONDecoder().decode(StoredRobots.self, from: Data(json.utf8))
    }

    var json: String? {
        (try? JSONEncoder().encode(self)).map { String(decoding: $0, as: UTF8.self) }
    }
}

private func robotsWrite(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    let fetch = Unmanaged<RobotsFetch>.fromOpaque(context!).takeUnretainedValue()
    // Any count but size * count ends the transfer: the parse limit was reached.
    return fetch.write(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
}

private func robotsHeader(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    let fetch = Unmanaged<RobotsFetch>.fromOpaque(context!).takeUnretainedValue()
    fetch.header(UnsafeRawBufferPointer(start: data, count: size * count))
    return size * count
}
