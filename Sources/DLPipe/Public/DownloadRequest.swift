import Foundation

/// What to download and where to put it.
public struct DownloadRequest: Sendable, Hashable {
    /// Where the body goes.
    public enum Destination: String, Sendable, Hashable {
        /// A file in the output directory (a part file, then its final name).
        case file
        /// Memory only: the `finished` event carries the bytes
        /// (`FinishedInfo.body`); nothing is written, no name is reserved and
        /// no state record is kept, so every run fetches it again.
        case memory
    }

    /// The http or https URL. Anything else (malformed, no host, another
    /// scheme) fails its download with kind `url`; it is never retried.
    public var url: String
    /// The file name; nil lets the server suggest one (Content-Disposition, else the URL).
    public var name: String?
    /// A directory relative to the engine's output directory; nil means the output directory.
    public var directory: String?
    /// Extra request headers, sent to the URL's own host only.
    public var headers: [String: String]
    /// The expected SHA-256 (hex); verified while the body streams.
    public var sha256: String?
    /// Higher runs first; equal priorities run in the order they were added.
    public var priority: Int
    /// The download that added this one, if any (chained downloads).
    public var parent: DownloadID?
    /// Free-form values carried to events and hooks.
    public var meta: [String: String]
    /// Seconds without progress before an attempt fails; nil uses the engine's
    /// `timeout`.
    public var timeout: Double?
    /// The engine's `maxTime`, `speedLimit` and `speedTime` for this download
    /// only; nil uses the engine's.
    public var maxTime: Double?
    public var speedLimit: Int?
    public var speedTime: Double?
    /// The most bytes the body may have: a larger Content-Length fails the
    /// download at once with kind `size`, and a body without one is stopped at
    /// the limit (never written past it). nil for no limit.
    public var maxSize: Int64?
    /// The most connections for this file (`EngineConfiguration.split`); nil
    /// uses the engine's.
    public var split: Int?
    /// Where the body goes: a file (the default) or memory.
    public var into: Destination
    /// The request method; nil is GET (`POST` when a `body` is given).
    public var method: String?
    /// The request body (a form, JSON: the caller sets its Content-Type, else
    /// curl's `application/x-www-form-urlencoded`). Sent again on each retry.
    public var body: [UInt8]?

    /// The caller's metadata as JSON text, carried untouched to `DownloadInfo`
    /// (the command line's `--json` `finished` events; a Lua job's `meta`).
    public var metaJSON: String?

    /// Adds between the job's own add and this one (a Lua job's `d.depth`):
    /// 0 for the job's own, the parent's plus one for an add from a handler.
    /// Carried with the request so that a shared queue's worker that did not
    /// add it still knows it.
    public var depth = 0

    /// The method of the first hop.
    public var effectiveMethod: String { method ?? (body != nil ? "POST" : "GET") }

    /// The limit of a memory download without a `maxSize` of its own.
    public static let defaultMemoryMaxSize: Int64 = 8 * 1024 * 1024

    /// The body limit the engine applies: `maxSize`, else 8 MiB for a memory
    /// download, else none.
    public var bodyLimit: Int64? {
        maxSize ?? (into == .memory ? DownloadRequest.defaultMemoryMaxSize : nil)
    }

    /// A request for `url` with every other field at its default.
    public init(
        url: String, name: String? = nil, directory: String? = nil,
        headers: [String: String] = [:], sha256: String? = nil, priority: Int = 0,
        parent: DownloadID? = nil, meta: [String: String] = [:],
        timeout: Double? = nil, maxSize: Int64? = nil, into: Destination = .file
    ) {
        self.url = url
        self.name = name
        self.directory = directory
        self.headers = headers
        self.sha256 = sha256
        self.priority = priority
        self.parent = parent
        self.meta = meta
        self.timeout = timeout
        self.maxSize = maxSize
        self.into = into
    }

    /// A request for `url` (`URL.absoluteString`) with every other field at
    /// its default. A URL that is not http or https (a file URL, say) fails
    /// its download with kind `url`.
    public init(
        url: URL, name: String? = nil, directory: String? = nil,
        headers: [String: String] = [:], sha256: String? = nil, priority: Int = 0,
        parent: DownloadID? = nil, meta: [String: String] = [:],
        timeout: Double? = nil, maxSize: Int64? = nil, into: Destination = .file
    ) {
        self.init(
            url: url.absoluteString, name: name, directory: directory, headers: headers, sha256: sha256,
            priority: priority, parent: parent, meta: meta, timeout: timeout, maxSize: maxSize, into: into)
    }

    /// Requests with the same key are the same download: the same URL into the
    /// same target. The engine queues such a repeat once (SPEC 1.1).
    /// A memory download has no target: its key is the URL alone, marked so
    /// that it never meets a file download of the same URL (nor its state).
    /// A request with another method or a body is another request: the method
    /// and the body's SHA-256 lead its key, so it never meets a GET of the
    /// same URL (a GET's key is unchanged, as the state knows it).
    public var deduplicationKey: String {
        let target = into == .memory ? "memory\u{0}" + url : url + "\u{0}" + (directory ?? "") + "\u{0}" + (name ?? "")
        guard effectiveMethod != "GET" || body != nil else { return target }
        let digest = body.map { bytes in
            let hasher = SHA256Hasher()
            bytes.withUnsafeBytes { hasher.update($0) }
            return hasher.finalHex()
        } ?? ""
        return effectiveMethod + "\u{0}" + digest + "\u{0}" + target
    }

    /// A key an earlier version made, with its URL in today's normal form
    /// (`URLNormalization`): the state re-keys its records with it (schema 6).
    /// The URL is the key's first part with a scheme (method, body digest and
    /// "memory" come before it, directory and name after it).
    static func renormalizedKey(_ key: String) -> String {
        var parts = key.split(separator: "\u{0}", omittingEmptySubsequences: false)
        guard let index = parts.firstIndex(where: { $0.contains("://") }) else { return key }
        parts[index] = Substring(URLNormalization.normalize(String(parts[index])))
        return parts.joined(separator: "\u{0}")
    }
}
