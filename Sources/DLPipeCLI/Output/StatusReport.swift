import DLPipe
import Foundation

/// The status report, for people and for machines.
enum StatusReport {
    static func text(
        path: String, records: [DownloadRecord], runs: [RunRecord], holder: Int32?, untracked: [ReleasedFile] = []
    ) -> String {
        var out = "state: \(path)\n"
        if let holder { out += "running: process \(holder) holds the lock\n" }
        let counts = Dictionary(grouping: records, by: \.status).mapValues(\.count)
        let order: [DownloadRecord.Status] = [.finished, .partial, .failed, .handled, .cancelled]
        let parts = order.compactMap { status in counts[status].map { "\($0) \(status.rawValue)" } }
        out += "downloads: \(parts.isEmpty ? "none" : parts.joined(separator: ", "))\n"
        let failed = records.filter { $0.status == .failed }
        if !failed.isEmpty {
            out += "failed:\n"
            for r in failed {
                // A part file with a validator is resumed by the next run: say how much is kept.
                let kept = r.bytes > 0 && (r.etag != nil || r.lastModified != nil)
                    ? ", \(Format.bytes(r.bytes)) kept: the next run resumes" : ""
                out += "  \(Terminal.clean(RedactedURL.text(r.url))): " + errorText(r, then: " (attempts: \(r.attempts)\(kept))") + "\n"
            }
        }
        // Failures a handler dealt with: listed apart, so they read as settled.
        let handled = records.filter { $0.status == .handled }
        if !handled.isEmpty {
            out += "handled:\n"
            for r in handled {
                out += "  \(Terminal.clean(RedactedURL.text(r.url))): " + errorText(r, then: " (attempts: \(r.attempts))") + "\n"
            }
        }
        let partial = records.filter { $0.status == .partial }
        if !partial.isEmpty {
            out += "partial:\n"
            for r in partial {
                let total = r.total.map { " of " + Format.bytes($0) } ?? ""
                out += "  \(Terminal.clean(r.target ?? RedactedURL.text(r.url))): \(Format.bytes(r.bytes))\(total)\n"
            }
        }
        if !untracked.isEmpty {
            out += "no longer tracked (placed by an earlier run, then left for another name):\n"
            for file in untracked {
                out += "  \(Terminal.clean(file.path)): \(Format.bytes(file.size)) from \(Terminal.clean(RedactedURL.text(file.url)))\n"
            }
        }
        if !runs.isEmpty {
            out += "runs:\n"
            let formatter = DateFormatter()
            formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
            for (run, liveness) in zip(runs, RunLiveness.of(runs, holder: holder)) {
                let start = formatter.string(from: Date(timeIntervalSince1970: run.startedAt))
                // "to END" for a run that ended; "running" or "killed" for one that did not.
                let span = run.endedAt.map { "\(start) to \(formatter.string(from: Date(timeIntervalSince1970: $0)))" }
                    ?? "\(start), \(liveness.rawValue)"
                out += "  #\(run.id) \(span), pid \(run.pid): \(run.finished) downloaded, \(run.unchanged) unchanged, \(run.failed) failed\n"
            }
        }
        return out
    }

    /// A record's last error with `suffix` at the end of its first line: a
    /// handler's traceback follows as indented lines, not escapes.
    private static func errorText(_ record: DownloadRecord, then suffix: String) -> String {
        let error = FailureText.withoutOwnURL(record.lastError ?? "unknown error", url: RedactedURL.text(record.url))
        let (first, rest) = Terminal.cleanLinesSplit(error)
        return first + suffix + rest.replacingOccurrences(of: "\n", with: "\n  ")
    }

    /// `sharedQueue`: the queue jobs whose workers write or wrote here, as
    /// JSON (`StatusCommand.sharedQueueJSON`).
    static func json(
        path: String, records: [DownloadRecord], runs: [RunRecord], holder: Int32?, untracked: [ReleasedFile] = [],
        sharedQueue: String = "[]"
    ) -> String {
        func count(_ status: DownloadRecord.Status) -> Int { records.filter { $0.status == status }.count }
        var object = JSONObject()
        object.add("state", path)
        object.add("finished", count(.finished))
        object.add("failed", count(.failed))
        object.add("handled", count(.handled))
        object.add("partial", count(.partial))
        object.add("cancelled", count(.cancelled))
        object.add("running_pid", holder)
        let downloads = records.map { r -> String in
            var o = JSONObject()
            o.add("url", RedactedURL.text(r.url))
            o.add("target", r.target)
            o.add("status", r.status.rawValue)
            o.add("bytes", r.bytes)
            o.add("total", r.total)
            o.add("etag", r.etag)
            o.add("last_modified", r.lastModified)
            o.add("sha256", r.sha256)
            o.add("attempts", r.attempts)
            o.add("last_error", r.lastError)
            return o.json
        }
        let runList = zip(runs, RunLiveness.of(runs, holder: holder)).map { run, liveness -> String in
            var o = JSONObject()
            o.add("id", run.id)
            o.add("status", liveness.rawValue)
            o.add("started_at", run.startedAt)
            o.add("ended_at", run.endedAt)
            o.add("pid", run.pid)
            o.add("finished", run.finished)
            o.add("failed", run.failed)
            o.add("unchanged", run.unchanged)
            return o.json
        }
        object.add("downloads", json: "[" + downloads.joined(separator: ",") + "]")
        object.add("runs", json: "[" + runList.joined(separator: ",") + "]")
        let untrackedList = untracked.map { file -> String in
            var o = JSONObject()
            o.add("path", file.path)
            o.add("url", RedactedURL.text(file.url))
            o.add("size", file.size)
            return o.json
        }
        object.add("untracked", json: "[" + untrackedList.joined(separator: ",") + "]")
        object.add("shared_queue", json: sharedQueue)
        return object.json
    }
}
