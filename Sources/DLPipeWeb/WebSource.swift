import Foundation

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

/// The embedded pages a source can serve. Both pages share one head (the
/// styles every view has) and one script (formats, tables, the chart, the
/// failures' groups): each page names them by a marker, replaced once, at
/// the first use, with the shared resource.
public enum WebPages {
    /// A run's live page (`--web`): reads `api/run`.
    public static let run: [UInt8] = joined(PackageResources.page_html)
    /// The page of `dlpipe web`, a shared queue's or a directory's: reads
    /// `api/view` and draws what its `kind` says.
    public static let fleet: [UInt8] = joined(PackageResources.fleet_html)

    static let headMarker = "<!--dlpipe:shared-head-->\n"
    static let scriptMarker = "/*dlpipe:shared.js*/\n"

    /// `page` with the shared head and script in place of their markers.
    static func joined(_ page: [UInt8]) -> [UInt8] {
        let text = String(decoding: page, as: UTF8.self)
            .replacingOccurrences(of: headMarker, with: String(decoding: PackageResources.shared_head_html, as: UTF8.self))
            .replacingOccurrences(of: scriptMarker, with: String(decoding: PackageResources.shared_js, as: UTF8.self))
        return Array(text.utf8)
    }
}
