import DLPipe
import DLPipeQueue
import DLPipeWeb
import Foundation
import Synchronization

/// `dlpipe web --queue URL [--name NAME]`: a shared queue's web view. A
/// thread of its own reads the queue every `interval` (the reads of
/// `status --queue` and `dlpipe queue failures|runs`, each one read-only
/// snapshot) and swaps in `/api/queue` and `/metrics`: a request never
/// waits for the database, and a slow browser never holds it.
final class QueueView: WebSource, @unchecked Sendable {
    // @unchecked: `samples` is touched only by the refresh thread; the
    // rest is immutable or in Mutexes.
    private let published = Mutex<(api: [UInt8], metrics: [UInt8])>(([], []))
    private let address: PostgresAddress
    private let name: String?
    private let interval: Double
    private let running = Mutex(true)
    /// Per job: bytes of finished files at the last reads, and the speed samples.
    private var samples: [String: (last: (at: Double, bytes: Int64)?, speeds: [(at: Double, speed: Double)])] = [:]
    private let start = Date()
    /// The last read that succeeded, and when: shown, marked stale, while
    /// later reads fail (touched only by the refresh thread).
    private var lastRead: (fleet: QueueFleet, at: Date)?
    /// When the reads began to fail; nil while they succeed.
    private var failingSince: Date?

    /// Jobs shown in detail without `--name` (the list names them all).
    static let jobsShown = 20
    /// Runs whose failures the page can show, the latest first.
    static let runsWithFailures = 5
    /// Failures listed per run, the first ones (the runs' counts cover all).
    static let failuresShown = 500
    /// Speed samples kept per job.
    static let samplesKept = 300

    init(address: PostgresAddress, name: String?, interval: Double = 1) {
        self.address = address
        self.name = name
        self.interval = interval
        published.withLock { $0 = (Array(#"{"kind":"queue","state":"starting"}"#.utf8), []) }
        let thread = Thread { [self] in
            ThreadName.set("dlpipe-webview")
            refreshLoop()
        }
        thread.start()
    }

    func api(_ name: String) -> [UInt8]? {
        name == "view" || name == "queue" ? published.withLock { $0.api } : nil
    }

    func metrics() -> [UInt8] { published.withLock { $0.metrics } }

    var page: [UInt8] { WebPages.fleet }

    func stop() { running.withLock { $0 = false } }

    private func refreshLoop() {
        var connection: PostgresConnection?
        while running.withLock({ $0 }) {
            let began = Date()
            do throws(PostgresError) {
                let open: PostgresConnection
                if let kept = connection, kept.isOpen {
                    open = kept
                } else {
                    open = try PostgresConnection(address, applicationName: "dlpipe web")
                }
                connection = open
                let fleet = try read(open)
                lastRead = (fleet, Date())
                failingSince = nil
                publish(fleet)
            } catch {
                connection = nil
                let since = failingSince ?? Date()
                failingSince = since
                publish(QueueReadError(
                    message: error.kind == .connection ? error.unreachableMessage : "\(error.message)", since: since, lastRead: lastRead?.at))
            }
            let left = interval - Date().timeIntervalSince(began)
            if left > 0 { Thread.sleep(forTimeInterval: left) }
        }
    }

    /// One read of everything the view shows.
    private func read(_ connection: PostgresConnection) throws(PostgresError) -> QueueFleet {
        let list: QueueJobList
        switch try QueueJobList.read(on: connection) {
        case .found(let found): list = found
        default: return QueueFleet(list: nil, jobs: [])
        }
        let names = name.map { [$0] } ?? list.jobs.prefix(Self.jobsShown).map(\.name)
        var jobs: [QueueFleet.Job] = []
        for job in names {
            guard case .found(let report) = try QueueReport.read(job: job, on: connection) else { continue }
            var history: [QueueRunHistory] = []
            if report.schemaVersion >= QueueSchema.runWorkersVersion, case .found(let found) = try QueueControlPlane.runs(job: job, on: connection) {
                history = found
            }
            // The latest run's failures (nil: its latest), then the runs' before it.
            var failures: [QueueFailureList] = []
            for run in [nil] + history.dropFirst().prefix(Self.runsWithFailures - 1).map({ Optional($0.run.id) }) {
                if case .found(let found) = try QueueControlPlane.failures(
                    job: job, run: run, host: nil, kind: nil, limit: Self.failuresShown, on: connection)
                {
                    failures.append(found)
                }
            }
            var transfers: [QueueTransfer] = []
            if case .found(let found) = try QueueTransfer.read(job: job, on: connection) { transfers = found }
            jobs.append(QueueFleet.Job(report: report, failures: failures, history: history, transfers: transfers))
        }
        return QueueFleet(list: list, jobs: jobs)
    }

    private func publish(_ fleet: QueueFleet) {
        let now = Date().timeIntervalSince(start)
        for job in fleet.jobs {
            let bytes = job.history.reduce(Int64(0)) { $0 + $1.bytes }
            var entry = samples[job.report.job.name] ?? (nil, [])
            if let last = entry.last, now > last.at {
                entry.speeds.append((now, Double(max(0, bytes - last.bytes)) / (now - last.at)))
                if entry.speeds.count > Self.samplesKept { entry.speeds.removeFirst(entry.speeds.count - Self.samplesKept) }
            }
            entry.last = (now, bytes)
            samples[job.report.job.name] = entry
        }
        let throughput = samples.mapValues(\.speeds)
        let api = QueueViewDocument.json(fleet, address: address, name: name, throughput: throughput)
        let metrics = QueueViewMetrics.text(fleet)
        published.withLock { $0 = (Array(api.utf8), Array(metrics.utf8)) }
    }

    /// The document keeps its shape while the database cannot be read: the
    /// last jobs read, marked stale with the error and since when (a page
    /// whose jobs vanish in an outage shows nothing to act on).
    private func publish(_ failure: QueueReadError) {
        let api = QueueViewDocument.json(
            lastRead?.fleet, address: address, name: name, throughput: samples.mapValues(\.speeds), outage: failure)
        let metrics = QueueViewMetrics.down()
        published.withLock { $0 = (Array(api.utf8), Array(metrics.utf8)) }
    }
}

/// What one read of the queue found.
struct QueueFleet {
    struct Job {
        var report: QueueReport
        /// The failures of the latest runs, newest run first (empty: the
        /// job was gone by then).
        var failures: [QueueFailureList]
        /// Every run the job keeps, with each worker's counts.
        var history: [QueueRunHistory]
        var transfers: [QueueTransfer]
    }

    /// nil when the database holds no queue yet.
    var list: QueueJobList?
    var jobs: [Job]
}

/// Why the last read failed (the view shows it and keeps trying).
struct QueueReadError {
    var message: String
    /// The first read that failed in a row.
    var since: Date
    /// The last read that succeeded, whose jobs the view still shows.
    var lastRead: Date?
}
