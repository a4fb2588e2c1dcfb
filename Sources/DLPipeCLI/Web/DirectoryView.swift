import DLPipe
import DLPipeWeb
import Foundation
import Synchronization

/// `dlpipe web DIR`: a directory's state as a web view. A thread of its own
/// reads the state every `interval` (what `dlpipe status DIR --json`
/// reads: counts, failures, runs, the lock's holder) and swaps in `/api/directory`
/// and `/metrics`; a request never opens the database.
final class DirectoryView: WebSource, @unchecked Sendable {
    // @unchecked: the mutable state is in Mutexes; the rest is immutable.
    private let published = Mutex<(api: [UInt8], metrics: [UInt8])>(([], []))
    private let directory: String
    private let statePath: String?
    private let interval: Double
    private let running = Mutex(true)

    /// Runs listed (the history), newest first.
    static let runsShown = 50
    /// Failures listed, the latest (failed, or dealt with by a handler).
    static let failuresShown = 500
    static let statuses: [DownloadRecord.Status] = [.finished, .partial, .failed, .handled, .cancelled, .skipped]

    init(directory: String, statePath: String?, interval: Double = 1) {
        self.directory = directory
        self.statePath = statePath
        self.interval = interval
        refresh()
        let thread = Thread { [self] in
            ThreadName.set("dlpipe-webview")
            while running.withLock({ $0 }) {
                Thread.sleep(forTimeInterval: interval)
                refresh()
            }
        }
        thread.start()
    }

    func api(_ name: String) -> [UInt8]? {
        name == "view" || name == "directory" ? published.withLock { $0.api } : nil
    }

    func metrics() -> [UInt8] { published.withLock { $0.metrics } }

    var page: [UInt8] { WebPages.fleet }

    func stop() { running.withLock { $0 = false } }

    private func refresh() {
        let layout = StateLayout(directory: directory)
        let path = layout.database(statePath: statePath)
        let holder = RunLock.holder(path: layout.lock(statePath: statePath))
        var object = JSONObject()
        object.add("kind", "directory")
        object.add("directory", directory)
        object.add("generated_at", ISO8601DateFormatter().string(from: Date()))
        var counts: [DownloadRecord.Status: Int] = [:]
        var runs: [RunRecord] = []
        if FileManager.default.fileExists(atPath: path) {
            do throws(StateFailure) {
                let store = try StateStore(path: path)
                counts = try store.statusCounts()
                // The latest failures only: a state can hold a million records.
                let failures = (try store.records(status: .failed) + store.records(status: .handled))
                    .sorted { $0.updatedAt < $1.updatedAt }.suffix(Self.failuresShown)
                runs = try store.runs(limit: Self.runsShown)
                object.add("state", "ok")
                var countObject = JSONObject()
                for status in Self.statuses { countObject.add(status.rawValue, counts[status] ?? 0) }
                object.add("counts", json: countObject.json)
                object.add("status", json: StatusReport.json(path: path, records: Array(failures), runs: runs, holder: holder))
            } catch {
                object.add("state", "error")
                object.add("error", error.message)
            }
        } else if let hint = StatusCommand.sharedQueueHint(directory, command: "web") {
            object.add("state", "shared queue")
            object.add("note", StatusCommand.sharedQueueHeadline(directory))
            object.add("hint", hint)
        } else {
            object.add("state", "no state")
        }
        object.add("shared_queue", json: StatusCommand.sharedQueueJSON(directory))
        let metrics = Self.metrics(counts: counts, runs: runs, holder: holder)
        published.withLock { $0 = (Array(object.json.utf8), Array(metrics.utf8)) }
    }

    /// The state's figures: downloads by status now, the outcomes summed
    /// over the runs listed, whether a run holds the lock.
    static func metrics(counts: [DownloadRecord.Status: Int], runs: [RunRecord], holder: Int32?) -> String {
        var out = "# HELP dlpipe_state_downloads The state's downloads by status.\n# TYPE dlpipe_state_downloads gauge\n"
        for status in statuses { out += "dlpipe_state_downloads{status=\"\(status.rawValue)\"} \(counts[status] ?? 0)\n" }
        out += "# HELP dlpipe_downloads_total Downloads ended in the runs listed, by outcome.\n# TYPE dlpipe_downloads_total counter\n"
        for (outcome, sum) in [("finished", runs.reduce(Int64(0)) { $0 + $1.finished }), ("unchanged", runs.reduce(Int64(0)) { $0 + $1.unchanged }),
                               ("failed", runs.reduce(Int64(0)) { $0 + $1.failed })] {
            out += "dlpipe_downloads_total{outcome=\"\(outcome)\"} \(sum)\n"
        }
        out += "# HELP dlpipe_run_active 1 while a run holds the directory's lock.\n# TYPE dlpipe_run_active gauge\n"
        out += "dlpipe_run_active \(holder == nil ? 0 : 1)\n"
        if let ended = runs.first(where: { $0.endedAt != nil })?.endedAt {
            out += "# HELP dlpipe_last_run_end_time_seconds When the latest run that ended ended, in seconds since the Unix epoch.\n"
            out += "# TYPE dlpipe_last_run_end_time_seconds gauge\ndlpipe_last_run_end_time_seconds \(RunMetrics.number(ended))\n"
        }
        return out
    }
}
