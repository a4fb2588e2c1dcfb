import DLPipe
import Foundation

/// A `DownloadRequest` as the shared queue keeps it, and back: what any
/// worker needs to start the download. Credentials (a `user:password@` part,
/// the request's headers, a body) go into the row's `secret` and nowhere else:
/// not into the URL column, the key, the state or the shared directory.
package enum QueuedRequestCodec {
    /// The row of `request` (its URL normalised already).
    package static func encode(_ request: DownloadRequest) -> QueuedRequest {
        var fields: [String: Any] = [:]
        if let name = request.name { fields["name"] = name }
        if let directory = request.directory { fields["dir"] = directory }
        if let sha256 = request.sha256 { fields["sha256"] = sha256 }
        if let parent = request.parent { fields["parent"] = parent.rawValue }
        if let timeout = request.timeout { fields["timeout"] = timeout }
        if let maxTime = request.maxTime { fields["max_time"] = maxTime }
        if let split = request.split { fields["split"] = split }
        if let speedLimit = request.speedLimit { fields["speed_limit"] = speedLimit }
        if let speedTime = request.speedTime { fields["speed_time"] = speedTime }
        if let maxSize = request.maxSize { fields["max_size"] = maxSize }
        if request.into == .memory { fields["into"] = "memory" }
        if let method = request.method { fields["method"] = method }
        if let metaJSON = request.metaJSON { fields["meta_json"] = metaJSON }
        if !request.meta.isEmpty { fields["meta"] = request.meta }
        if request.depth > 0 { fields["depth"] = request.depth }
        var secret: [String: Any] = [:]
        let hasUser = PendingRule.hasUserPart(request.url)
        if hasUser { secret["url"] = request.url }
        if !request.headers.isEmpty { secret["headers"] = request.headers }
        if let body = request.body { secret["body"] = Data(body).base64EncodedString() }
        return QueuedRequest(
            key: key(of: request), url: hasUser ? RedactedURL.text(request.url) : request.url,
            host: URLParts(request.url)?.hostPort ?? "", priority: request.priority,
            request: json(fields), secret: secret.isEmpty ? nil : json(secret))
    }

    /// The request of a claimed row; nil when its JSON cannot be read.
    package static func decode(_ claimed: ClaimedDownload, engine: Int) -> DownloadRequest? {
        guard let fields = object(claimed.request) else { return nil }
        let secret = claimed.secret.flatMap(object) ?? [:]
        var request = DownloadRequest(
            url: secret["url"] as? String ?? claimed.url, name: fields["name"] as? String,
            directory: fields["dir"] as? String, headers: secret["headers"] as? [String: String] ?? [:],
            sha256: fields["sha256"] as? String, priority: claimed.priority,
            parent: (fields["parent"] as? NSNumber).map { $0.intValue }.map { DownloadID($0, engine: engine) },
            meta: fields["meta"] as? [String: String] ?? [:],
            timeout: (fields["timeout"] as? NSNumber)?.doubleValue, maxSize: (fields["max_size"] as? NSNumber)?.int64Value,
            into: fields["into"] as? String == "memory" ? .memory : .file)
        request.method = fields["method"] as? String
        request.maxTime = (fields["max_time"] as? NSNumber)?.doubleValue
        request.split = (fields["split"] as? NSNumber)?.intValue
        request.speedLimit = (fields["speed_limit"] as? NSNumber)?.intValue
        request.speedTime = (fields["speed_time"] as? NSNumber)?.doubleValue
        request.metaJSON = fields["meta_json"] as? String
        request.depth = (fields["depth"] as? NSNumber)?.intValue ?? 0
        if let body = secret["body"] as? String { request.body = Data(base64Encoded: body).map(Array.init) }
        return request
    }

    /// The row's key: the engine's deduplication key, as bytes (it holds NUL
    /// separators). A key whose URL carries a password is kept as its digest,
    /// so that the password is only in `secret`.
    package static func key(of request: DownloadRequest) -> [UInt8] {
        let key = request.deduplicationKey
        guard PendingRule.hasUserPart(request.url) else { return Array(key.utf8) }
        return Array(("sha256:" + FileDigest.sha256Hex(of: Array(key.utf8))).utf8)
    }

    private static func json(_ object: [String: Any]) -> String {
        // Most requests set no field: no trip through JSONSerialization, which
        // took a few microseconds a request (40 ms of the 52 that a top level
        // of 10,000 adds spent encoding, before its first claim).
        guard !object.isEmpty else { return "{}" }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    private static func object(_ text: String) -> [String: Any]? {
        // As PostgreSQL gives back an empty jsonb object: every claim of a
        // request without fields.
        if text == "{}" { return [:] }
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
    }
}
