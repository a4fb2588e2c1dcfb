import DLPipe

/// A run as the web view shows it, folded from the engine's events: counts
/// by outcome, what waits and what transfers (per host too), bytes,
/// retries, recent failures and a histogram of durations. Pure: the caller
/// gives each event's time (a monotonic clock), so that it is tested
/// without one. Every step is O(1): the engine's thread folds each event.
package struct RunModel: Sendable {
    /// A transfer under way: from its response to its end (or its retry).
    /// URLs here and in `Failure` are shown: their passwords are redacted.
    package struct Transfer: Sendable {
        package var url: String
        package var name: String?
        package var host: String
        package var attempt: Int
        /// The bytes of the file at the last report, to count what arrives.
        var reported: Int64
    }

    /// A download that ended `failed`.
    package struct Failure: Sendable, Hashable {
        package var url: String
        package var kind: String
        package var message: String
        package var status: Int?
        package var attempt: Int
        /// Seconds from the view's start.
        package var at: Double
    }

    /// Downloads open in each host: transferring, or waiting their turn
    /// (queued, held back by the host's limit or delay, or in a retry's backoff).
    package struct HostLoad: Sendable, Hashable {
        package var inFlight = 0
        package var waiting = 0
    }

    /// Outcomes in the order they are shown.
    package static let outcomes = ["finished", "unchanged", "skipped", "failed", "handled", "cancelled"]
    /// Upper bounds of the duration histogram's buckets, in seconds.
    package static let durationBuckets: [Double] = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600]
    /// Failures kept for the page, the latest ones.
    package static let failuresKept = 50

    package private(set) var counts: [String: Int] = Dictionary(uniqueKeysWithValues: outcomes.map { ($0, 0) })
    package private(set) var transfers: [DownloadID: Transfer] = [:]
    package private(set) var hosts: [String: HostLoad] = [:]
    /// Open downloads not transferring.
    package private(set) var waiting = 0
    package private(set) var receivedBytes: Int64 = 0
    package private(set) var retries = 0
    /// The latest failures, oldest first.
    package private(set) var failures: [Failure] = []
    /// Per bucket, durations at or under its bound (not cumulative), and past the last.
    package private(set) var durationCounts = [Int](repeating: 0, count: durationBuckets.count + 1)
    package private(set) var durationSum = 0.0
    /// The figures the terminal shows: files, bytes, speed, ETA.
    package private(set) var meter = ProgressMeter()
    /// The queue drained: nothing is open and no hook added more.
    package private(set) var drained = false
    private let start: Double

    package init(start: Double) {
        self.start = start
    }

    package mutating func record(_ event: DownloadEvent, at time: Double) {
        meter.record(event, at: time)
        switch event {
        case .queued(let d):
            waiting += 1
            hosts[Self.host(of: d.url), default: HostLoad()].waiting += 1
            drained = false
        case .response(let d, let r):
            if var transfer = transfers[d.id] {
                transfer.reported = r.resumedFrom ?? 0
                transfer.attempt = d.attempt
                transfers[d.id] = transfer
                return
            }
            let host = Self.host(of: d.url)
            transfers[d.id] = Transfer(url: RedactedURL.text(d.url), name: d.name ?? r.filename, host: host, attempt: d.attempt, reported: r.resumedFrom ?? 0)
            move(host, toFlight: true)
        case .progress(let d, let p):
            guard var transfer = transfers[d.id] else { return }
            receivedBytes += max(0, p.bytes - transfer.reported)
            transfer.reported = max(transfer.reported, p.bytes)
            transfers[d.id] = transfer
        case .retrying(let d, _, _), .paused(let d):
            if case .retrying = event { retries += 1 }
            if let transfer = transfers.removeValue(forKey: d.id) { move(transfer.host, toFlight: false) }
        case .drained:
            drained = true
        default:
            guard event.isTerminal, let d = event.download else { return }
            end(event, d, at: time)
        }
    }

    /// A download's terminal event: its count, its bytes, its duration or failure.
    private mutating func end(_ event: DownloadEvent, _ d: DownloadInfo, at time: Double) {
        let host: String
        if let transfer = transfers.removeValue(forKey: d.id) {
            host = transfer.host
            hosts[host, default: HostLoad()].inFlight -= 1
            if case .finished(_, let f) = event, !f.unchanged { receivedBytes += max(0, f.bytes - transfer.reported) }
        } else {
            host = Self.host(of: d.url)
            hosts[host, default: HostLoad()].waiting -= 1
            waiting -= 1
        }
        if hosts[host] == HostLoad() { hosts[host] = nil }
        switch event {
        case .finished(_, let f):
            counts[f.unchanged ? "unchanged" : "finished", default: 0] += 1
            let bucket = Self.durationBuckets.firstIndex { f.seconds <= $0 } ?? Self.durationBuckets.count
            durationCounts[bucket] += 1
            durationSum += f.seconds
        case .failed(_, let e):
            counts["failed", default: 0] += 1
            failures.append(Failure(url: RedactedURL.text(d.url), kind: e.kind.rawValue, message: e.message, status: e.status, attempt: d.attempt, at: time - start))
            if failures.count > Self.failuresKept { failures.removeFirst(failures.count - Self.failuresKept) }
        case .handled: counts["handled", default: 0] += 1
        case .skipped: counts["skipped", default: 0] += 1
        case .cancelled: counts["cancelled", default: 0] += 1
        default: break
        }
    }

    private mutating func move(_ host: String, toFlight: Bool) {
        let step = toFlight ? 1 : -1
        hosts[host, default: HostLoad()].inFlight += step
        hosts[host, default: HostLoad()].waiting -= step
        waiting -= step
    }

    /// Downloads ended, all outcomes together.
    package var ended: Int { counts.values.reduce(0, +) }

    /// The host (and port) of a URL, without credentials; "" when there is none.
    package static func host(of url: String) -> String {
        var rest = Substring(url)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        if let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        return rest.lowercased()
    }
}
