import Foundation
import Synchronization

/// GETs (and other methods) against `--web`'s server through curl, as an
/// operator's script would: the status, the headers (names in lower case)
/// and the body. Bounded: curl gives up after 10 s.
struct WebReply: Sendable {
    var status: Int
    var headers: [String: String]
    var body: String

    static func fetch(_ url: String, method: String = "GET", headers: [String] = []) throws -> WebReply {
        var arguments = ["-s", "-i", "--max-time", "10"] + (method == "HEAD" ? ["-I"] : ["-X", method]) + [url]
        for header in headers { arguments += ["-H", header] }
        let (status, out, err) = try Subprocess("/usr/bin/curl", arguments, timeout: 20).finish()
        guard status == 0 else { throw WebClientError(description: "curl \(url): exit \(status): \(err)") }
        guard let split = out.range(of: "\r\n\r\n") else { throw WebClientError(description: "no head in \(out)") }
        let lines = out[..<split.lowerBound].components(separatedBy: "\r\n")
        let code = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return WebReply(status: code, headers: fields, body: String(out[split.upperBound...]))
    }

    /// The body as a JSON object.
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
    }
}

struct WebClientError: Error, CustomStringConvertible {
    let description: String
}

/// A client that connects and stalls: it sends the start of a request and
/// then nothing, and never reads. Closed when released.
final class StalledClient {
    private let fd: Int32

    init?(port: Int) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        let start = Array("GET /api/run HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8)
        guard connected == 0, write(fd, start, start.count) == start.count else {
            Self.lastError.withLock { $0 = errno }
            return nil
        }
    }

    /// errno of the last client that could not connect or send, for a failure's message.
    static let lastError = Mutex<Int32>(0)

    // Also after a failed init: the descriptor is this object's from `socket` on.
    deinit { if fd >= 0 { close(fd) } }
}
