/// What the web server shows: the documents of `/api/...` and the text of
/// `/metrics`, ready to send. The server asks on its own thread for every
/// request, so a source answers from what it already built (a snapshot
/// swapped under a lock), never by calling into an engine or a database.
/// A run's view (`RunView`) is one; a shared queue's or a directory's state
/// can be another, behind the same server and token rules.
public protocol WebSource: Sendable {
    /// The JSON document at `/api/NAME`, or nil when there is none (404).
    func api(_ name: String) -> [UInt8]?
    /// The Prometheus text exposition (format 0.0.4).
    func metrics() -> [UInt8]
    /// The HTML page at `/` (it reads only `/api`).
    var page: [UInt8] { get }
}

/// The embedded pages a source can serve.
public enum WebPages {
    /// A run's live page (`--web`): reads `api/run`.
    public static var run: [UInt8] { PackageResources.page_html }
    /// The page of `dlpipe web`, a shared queue's or a directory's: reads
    /// `api/view` and draws what its `kind` says.
    public static var fleet: [UInt8] { PackageResources.fleet_html }
}
