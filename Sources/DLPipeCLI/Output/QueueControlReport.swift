import DLPipe
import DLPipeQueue
import Foundation

/// What `dlpipe queue` prints, in the words of `status --queue`: what
/// workers hold is `transferring`, `held ahead` and `placing`, and a run's
/// counts are `downloaded` (files fetched) and `unchanged` (a 304).
enum QueueControlReport {
    /// `host` and `kind`: the filters asked for, which an empty list names.
    static func failures(_ list: QueueFailureList, json: Bool, name: String = "", host: String? = nil, kind: String? = nil) -> String {
        if json {
            var object = JSONObject()
            object.add("run", list.run)
            object.add("failures", json: "[" + list.failures.map { failure -> String in
                var o = JSONObject()
                o.add("id", failure.id)
                o.add("url", RedactedURL.text(failure.url))
                o.add("host", failure.host)
                o.add("kind", failure.kind)
                o.add("last_error", failure.lastError)
                o.add("attempts", failure.attempts)
                o.add("ended_ago", failure.endedAgo)
                return o.json
            }.joined(separator: ",") + "]")
            return object.json
        }
        guard let run = list.run else { return noRunKept(name) }
        guard !list.failures.isEmpty else {
            let filters = (host.map { [" on host \(Terminal.clean($0))"] } ?? []) + (kind.map { [" of kind \(Terminal.clean($0))"] } ?? [])
            return "no failure\(filters.joined()) in run #\(run)\n"
        }
        var out = "run #\(run): \(list.failures.count) failed\n"
        for failure in list.failures {
            let url = RedactedURL.text(failure.url)
            let when = failure.endedAgo.map { ", \(QueueStatusReport.age($0)) ago" } ?? ""
            let error = FailureText.withoutOwnURL(failure.lastError ?? "unknown error", url: url)
            out += "  #\(failure.id) \(Terminal.clean(url)): \(Terminal.cleanLines(error).replacingOccurrences(of: "\n", with: " "))"
                + " (attempts: \(failure.attempts)\(when))\n"
        }
        return out
    }

    static func runs(_ history: [QueueRunHistory], json: Bool, name: String = "") -> String {
        if json {
            return "[" + history.map { entry -> String in
                var o = JSONObject()
                o.add("id", entry.run.id)
                o.add("status", entry.run.endedAgo == nil ? "running" : "ended")
                o.add("started_ago", entry.run.startedAgo)
                o.add("ended_ago", entry.run.endedAgo)
                o.add("idle_ago", entry.run.idleAgo)
                o.add("exit_code", entry.run.exitCode)
                o.add("done_worker", entry.run.doneWorker)
                add(finished: entry.run.finished, unchanged: entry.run.unchanged, failed: entry.run.failed, handled: entry.run.handled,
                    skipped: entry.skipped, cancelled: entry.cancelled, bytes: entry.bytes, to: &o)
                o.add("retried", entry.retried)
                o.add("workers", json: "[" + entry.workers.map { worker -> String in
                    var w = JSONObject()
                    w.add("id", worker.id)
                    w.add("hostname", worker.hostname)
                    w.add("pid", worker.pid)
                    add(finished: worker.finished, unchanged: worker.unchanged, failed: worker.failed, handled: worker.handled,
                        skipped: worker.skipped, cancelled: worker.cancelled, bytes: worker.bytes, to: &w)
                    return w.json
                }.joined(separator: ",") + "]")
                return o.json
            }.joined(separator: ",") + "]"
        }
        guard !history.isEmpty else { return noRunKept(name) }
        var out = ""
        for entry in history {
            let run = entry.run
            var span = "started \(QueueStatusReport.age(run.startedAgo)) ago"
            if let ended = run.endedAgo {
                span += ", ended \(QueueStatusReport.age(ended)) ago" + (run.exitCode.map { ", exit \($0)" } ?? "")
            } else {
                span += ", running" + (run.idleAgo.map { ", idle for \(QueueStatusReport.age($0))" } ?? "")
            }
            let done = (entry.retried > 0 ? "; \(entry.retried) failed put back by retry --failed" : "")
                + (run.doneWorker.map { "; done ran in #\($0)" } ?? "")
            out += "#\(run.id) \(span): " + counts(run.finished, run.unchanged, run.failed, run.handled, entry.skipped, entry.cancelled, entry.bytes)
                + done + "\n"
            for worker in entry.workers {
                let who = worker.hostname.map { " \(Terminal.clean($0)) pid \(worker.pid ?? 0)" } ?? ""
                out += "  #\(worker.id)\(who): "
                    + counts(worker.finished, worker.unchanged, worker.failed, worker.handled, worker.skipped, worker.cancelled, worker.bytes) + "\n"
            }
        }
        return out
    }

    static func steered(_ steered: QueueSteered, verb: String, name: String, json: Bool) -> String {
        let live = steered.workers.filter { !$0.leaseExpired }
        if json {
            var object = JSONObject()
            object.add("job", name)
            object.add("command", verb)
            object.add("changed", steered.changed)
            object.add("paused", steered.paused)
            object.add("workers", json: workersJSON(live))
            return object.json
        }
        let job = Terminal.clean(name)
        var out: String
        switch verb {
        case "pause":
            out = steered.changed ? "paused job \(job): no worker claims until `dlpipe queue resume`; transfers that run finish, claims held ahead go back to the queue\n"
                : "job \(job) was already paused\n"
        case "resume":
            out = steered.changed ? "resumed job \(job): its workers claim again\n" : "job \(job) was not paused\n"
        default:
            out = live.isEmpty ? "job \(job) has no live worker\n"
                : "asked \(live.count) worker\(live.count == 1 ? "" : "s") of job \(job) to stop: each gives back what it holds and exits 130\n"
        }
        for worker in live {
            out += "  #\(worker.id) \(Terminal.clean(worker.hostname)) pid \(worker.pid): \(QueueStatusReport.held(worker))\n"
        }
        return out
    }

    /// The live workers a steering command reached, as a JSON array.
    private static func workersJSON(_ live: [QueueWorkerStatus]) -> String {
        "[" + live.map { worker -> String in
            var o = JSONObject()
            o.add("id", worker.id)
            o.add("hostname", worker.hostname)
            o.add("pid", worker.pid)
            o.add("transferring", worker.transferring)
            o.add("held_ahead", worker.heldAhead)
            o.add("placing", worker.placing)
            return o.json
        }.joined(separator: ",") + "]"
    }

    static func retried(_ retried: QueueRetried, name: String, json: Bool) -> String {
        if json {
            var object = JSONObject()
            object.add("job", name)
            object.add("run", retried.run)
            object.add("retried", retried.retried)
            object.add("reopened", retried.reopened)
            return object.json
        }
        guard let run = retried.run else { return noRunKept(name) }
        guard retried.retried > 0 else { return "run #\(run): no failed download to retry\n" }
        let plural = retried.retried == 1 ? "" : "s"
        return "run #\(run): \(retried.retried) failed download\(plural) ready again"
            + (retried.reopened ? "; the run is open again: running workers claim them, a worker started now joins it\n"
                : "; the run's workers claim them\n")
    }

    static func cancelled(_ cancelled: QueueCancelledRun, name: String, json: Bool) -> String {
        let live = cancelled.workers.filter { !$0.leaseExpired }
        if json {
            var object = JSONObject()
            object.add("job", name)
            object.add("run", cancelled.run)
            object.add("queued_cancelled", cancelled.queued)
            object.add("already_cancelled", cancelled.cancelledAgo != nil)
            object.add("workers", json: workersJSON(live))
            return object.json
        }
        guard let run = cancelled.run else { return "job \(Terminal.clean(name)) has no open run\n" }
        var out: String
        if let ago = cancelled.cancelledAgo {
            // Not "cancelled 0" as if this one cancelled again: the first did, and the run settles.
            out = "run #\(run) was already cancelled \(QueueStatusReport.age(ago)) ago and is settling: the workers cancel what they hold,"
                + " then the run ends (done runs once)"
                + (cancelled.queued > 0 ? "; \(cancelled.queued) waiting download\(cancelled.queued == 1 ? "" : "s") since ended cancelled" : "") + "\n"
        } else {
            out = "run #\(run) cancelled: \(cancelled.queued) waiting download\(cancelled.queued == 1 ? "" : "s") ended cancelled;"
                + " the workers cancel what they hold, then the run ends (done runs once)\n"
        }
        for worker in live {
            out += "  #\(worker.id) \(Terminal.clean(worker.hostname)) pid \(worker.pid): \(QueueStatusReport.held(worker))\n"
        }
        return out
    }

    static func purged(_ purged: QueuePurged, name: String, json: Bool) -> String {
        if json {
            var object = JSONObject()
            object.add("job", name)
            object.add("runs_deleted", purged.runs)
            object.add("worker_rows_deleted", purged.workerRows)
            object.add("runs_kept", purged.kept)
            return object.json
        }
        return "job \(Terminal.clean(name)): deleted \(purged.runs) ended run\(purged.runs == 1 ? "" : "s") (\(purged.workerRows) workers' counts); \(purged.kept) kept\n"
    }

    /// A job with no run: none made yet, or every one purged; either way none is kept.
    private static func noRunKept(_ name: String) -> String {
        "no run of job \(Terminal.clean(name)) is kept (a worker's start makes one; `dlpipe queue purge` deletes ended ones)\n"
    }

    /// "435 downloaded, 19876 unchanged, 3 failed, 0 handled", then the
    /// skipped and cancelled when there are any, and the bytes.
    private static func counts(
        _ finished: Int64, _ unchanged: Int64, _ failed: Int64, _ handled: Int64, _ skipped: Int64, _ cancelled: Int64, _ bytes: Int64
    ) -> String {
        var parts = ["\(finished) downloaded", "\(unchanged) unchanged", "\(failed) failed", "\(handled) handled"]
        if skipped > 0 { parts.append("\(skipped) skipped") }
        if cancelled > 0 { parts.append("\(cancelled) cancelled") }
        parts.append(Format.bytes(bytes))
        return parts.joined(separator: ", ")
    }

    private static func add(
        finished: Int64, unchanged: Int64, failed: Int64, handled: Int64, skipped: Int64, cancelled: Int64, bytes: Int64,
        to object: inout JSONObject
    ) {
        object.add("finished", finished)
        object.add("unchanged", unchanged)
        object.add("failed", failed)
        object.add("handled", handled)
        object.add("skipped", skipped)
        object.add("cancelled", cancelled)
        object.add("bytes", bytes)
    }
}
