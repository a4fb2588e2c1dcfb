import Foundation

/// GETs (and other methods) against `--web`'s server through curl, as an
/// operator's script would: the status, the headers (names in lower case)
/// and the body. Bounded: curl gives up after 10 s.
struct WebReply: Sendable {
    var status: Int
    var headers: [String: String]
    var body: String

    static func fetch(_ url: String, method: String = "GET", headers: [String] = []) throws -> WebReply {
        var arguments = ["-s", "-i", "--max-time", "10", "-X", method, url]
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
