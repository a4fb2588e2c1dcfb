/// What the state remembers of one download (SPEC 4).
package struct DownloadRecord: Sendable, Hashable {
    /// `handled`: failed, and a `failed` hook dealt with it (stored as text: an
    /// older dlpipe reads it as failed, no schema change).
    public enum Status: String, Sendable { case partial, finished, failed, handled, cancelled, skipped }
    /// The request's identity: URL and requested target (`DownloadRequest.deduplicationKey`).
    public var key: String
    public var url: String
    /// The final file, relative to the output directory.
    public var target: String?
    public var status: Status
    public var bytes: Int64
    public var total: Int64?
    public var etag: String?
    public var lastModified: String?
    public var sha256: String?
    /// The media type of the file's last 200 (`f.type` when a later run keeps
    /// the file: a 304, or refresh "never").
    public var mediaType: String?
    /// Attempts in the run that last touched the download.
    public var attempts: Int
    public var lastError: String?
    public var updatedAt: Double
    /// The file the state last placed for this download, kept apart from
    /// `status`: a run that replaces it saves a `partial` record (the new
    /// response's facts) long before the new file is in place, and a run
    /// killed meanwhile must still know that the file under the name is its own.
    public var placed: PlacedFile? = nil
    /// A split download's segments while it is partial, `start:next:end`
    /// triples joined by commas (`SplitPlan.recorded`); nil when it did not split.
    public var segments: String? = nil

    package init(
        key: String, url: String, target: String? = nil, status: Status, bytes: Int64, total: Int64? = nil, etag: String? = nil,
        lastModified: String? = nil, sha256: String? = nil, mediaType: String? = nil, attempts: Int, lastError: String? = nil,
        updatedAt: Double, placed: PlacedFile? = nil, segments: String? = nil
    ) {
        self.key = key
        self.url = url
        self.target = target
        self.status = status
        self.bytes = bytes
        self.total = total
        self.etag = etag
        self.lastModified = lastModified
        self.sha256 = sha256
        self.mediaType = mediaType
        self.attempts = attempts
        self.lastError = lastError
        self.updatedAt = updatedAt
        self.placed = placed
        self.segments = segments
    }
}
