#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// `dlpipe run --replay DIR`: a tiny HTTP/1.1 server on loopback that answers
/// with the responses of a recording. The engine's transport stays as it is:
/// in a replay each request goes to this server as plain http, whatever the
/// URL's scheme (no TLS to fake, no certificate to trust), carrying the URL
/// it stands for in `X-Dlpipe-Replay-URL`; the engine keeps the real URL for
/// everything else (names, redirects, events). A URL asked for again gets its
/// next recorded response, and the last one once they are used up.
public final class ReplayServer: @unchecked Sendable {
    // @unchecked: `entries` and `directory` are immutable; `served` is a Mutex.
    /// The recording's folder (what `--record DIR` wrote).
    public let directory: String
    /// `http://127.0.0.1:PORT/`: where the engine sends every request.
    public let address: String
    private let entries: [String: [Recording.Entry]]
    private let served = Mutex<[String: Int]>([:])
    private let listener: Int32
    static let urlHeader = "X-Dlpipe-Replay-URL"

    /// Reads the recording in `directory` and starts answering on loopback.
    public init(directory: String) throws(DownloadError) {
        self.directory = directory
        var byURL: [String: [Recording.Entry]] = [:]
        for entry in try Recording.read(directory) { byURL[entry.url, default: []].append(entry) }
        entries = byURL
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, bound == 0, listen(fd, 128) == 0 else {
            throw DownloadError(.io, "--replay: cannot listen on loopback: \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        self.address = "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))/"
        let thread = Thread { [self] in
            ThreadName.set("dlpipe-replay")
            acceptLoop()
        }
        thread.start()
    }

    /// Whether the recording has a response for `url` (by its redacted form,
    /// as the recording keeps it).
    public func has(_ url: String) -> Bool { entries[RedactedURL.text(url)] != nil }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            let thread = Thread { [self] in
                ThreadName.set("dlpipe-replayio")
                serve(connection)
                close(connection)
            }
            thread.start()
        }
    }

    /// Reads one request head and answers it; the connection then closes.
    private func serve(_ connection: Int32) {
        var request: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while request.count < 256 * 1024 {
            let n = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return }
            request.append(contentsOf: chunk[0..<n])
            if let end = request.firstRange(of: [13, 10, 13, 10]) { request.removeSubrange(end.upperBound...); break }
        }
        let head = String(decoding: request, as: UTF8.self)
        let prefix = Self.urlHeader.lowercased() + ":"
        guard let line = head.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix(prefix) }) else {
            return send(connection, Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
        }
        let url = RedactedURL.text(line.dropFirst(prefix.count).trimmingCharacters(in: .whitespaces))
        guard let list = entries[url], !list.isEmpty else {
            // The engine checks `has` before asking, so this is a URL it did not.
            return send(connection, Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
        }
        let turn = served.withLock { served -> Int in
            defer { served[url, default: 0] += 1 }
            return served[url, default: 0]
        }
        let entry = list[min(turn, list.count - 1)]
        let recordedHead = (try? Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(entry.number).head"))) ?? Data()
        let body = (try? Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(entry.number).body"))) ?? Data()
        send(connection, Self.head(recordedHead, bodyLength: body.count, complete: entry.complete, url: entry.url) + Array(body))
        if entry.ending == .stopped { waitForClose(connection) }
    }

    /// A body dlpipe stopped reading when it was recorded (a response hook's
    /// skip, a cancel) was still flowing then: the connection stays open, as
    /// the server's did, until the engine closes it, so the replayed hook
    /// decides before the transfer can end, as it did. Bounded: a client
    /// that never closes is let go after a minute.
    private func waitForClose(_ connection: Int32) {
        var limit = timeval(tv_sec: 60, tv_usec: 0)
        _ = setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var sink = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = sink.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if n > 0 { continue }
            if n < 0 && errno == EINTR { continue }
            return
        }
    }

    /// The recorded head for a connection of its own: the body is sent as
    /// recorded (its chunks joined), so its length replaces the framing. A 2xx
    /// body that was not whole (a skip, a cancel, a broken transfer) keeps its
    /// original length, and the early close ends the transfer as it ended when
    /// it was recorded; an error status's body, which the engine never reads,
    /// is served as the bytes there are.
    /// A relative `Location` is made absolute against the URL the response
    /// was recorded for: curl would resolve it against this server's address.
    static func head(_ recorded: Data, bodyLength: Int, complete: Bool, url: String) -> [UInt8] {
        let text = String(decoding: recorded, as: UTF8.self)
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: true).map(String.init)
        guard !lines.isEmpty else { return Array("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8) }
        let status = lines.removeFirst()
        let code = status.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        let whole = complete || !(200...299).contains(code)
        var out = [status]
        var length: String?
        for line in lines {
            let name = line.split(separator: ":", maxSplits: 1).first?.lowercased() ?? ""
            if name == "content-length" { length = line; continue }
            if name == "transfer-encoding" || name == "connection" || name == "keep-alive" { continue }
            if name == "location", let value = line.split(separator: ":", maxSplits: 1).last,
                let absolute = URL(string: value.trimmingCharacters(in: .whitespaces), relativeTo: URL(string: url))?.absoluteString
            {
                out.append("Location: " + absolute)
                continue
            }
            out.append(line)
        }
        if whole { out.append("Content-Length: \(bodyLength)") } else if let length { out.append(length) }
        out.append("Connection: close")
        return Array((out.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }

    private func send(_ connection: Int32, _ bytes: [UInt8]) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(connection, $0.baseAddress! + done, $0.count - done, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            done += n
        }
    }
}
