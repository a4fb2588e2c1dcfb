import DLPipe
import DLPipeQueue
import Foundation

/// `dlpipe status --queue` for people and for machines. Times are ages the
/// database measured ("12 s ago"), never this machine's clock.
enum QueueStatusReport {
    // MARK: one job

    static func text(_ report: QueueReport, address: PostgresAddress) -> String {
        var out = "queue: \(Terminal.clean(address.description))\n"
        out += schemaLine(report.schemaVersion)
        var limits = report.job.pausedAgo.map { ["paused \(age($0)) ago: no new claims until dlpipe queue resume"] } ?? []
        limits.append("per host \(report.perHost)")
        if report.hostDelay > 0 { limits.append("host delay \(String(format: "%g", report.hostDelay)) s") }
        if let max = report.maxDownloads { limits.append("at most \(max) downloads") }
        out += "job: \(Terminal.clean(report.job.name)) (\(limits.joined(separator: ", ")))\n"
        out += "downloads: \(counts(report.job.counts))\n"
        out += "workers: \(workers(alive: report.job.workersAlive, expired: report.job.workersExpired))\n"
        for worker in report.workers {
            let who = "#\(worker.id) \(Terminal.clean(worker.hostname)) pid \(worker.pid)"
            if worker.leaseExpired {
                // Dead: its claims wait for the next worker that polls to take them back.
                out += "  \(who): lease expired \(age(-worker.leaseLeft)) ago, last heartbeat \(age(worker.heartbeatAgo)) ago"
                    + " (dead; \(held(worker)), not yet taken back)\n"
            } else {
                out += "  \(who): heartbeat \(age(worker.heartbeatAgo)) ago, lease \(age(worker.leaseLeft)) left, \(held(worker))\n"
            }
        }
        if report.inFlight == 0 {
            out += "in flight: none\n"
        } else {
            let shown = report.hosts.count < report.hostsInFlight ? ", the \(report.hosts.count) busiest:" : ""
            out += "in flight: \(report.inFlight) on \(report.hostsInFlight) host\(report.hostsInFlight == 1 ? "" : "s")\(shown)\n"
            for host in report.hosts {
                out += "  \(Terminal.clean(host.host)): \(host.inFlight) (\(host.waiting) waiting)\n"
            }
        }
        if report.job.counts.failed > 0 {
            let shown = report.failures.count < report.job.counts.failed ? ", the \(report.failures.count) most recent:" : ""
            out += "failed: \(report.job.counts.failed)\(shown)\n"
            for failure in report.failures {
                let when = failure.endedAgo.map { ", \(age($0)) ago" } ?? ""
                let error = FailureText.withoutOwnURL(failure.lastError ?? "unknown error", url: RedactedURL.text(failure.url))
                let (first, rest) = Terminal.cleanLinesSplit(error)
                out += "  \(Terminal.clean(RedactedURL.text(failure.url))): \(first) (attempts: \(failure.attempts)\(when))"
                    + rest.replacingOccurrences(of: "\n", with: "\n  ") + "\n"
            }
        }
        if !report.runs.isEmpty {
            out += "runs:\n"
            for run in report.runs {
                var span = "started \(age(run.startedAgo)) ago"
                if let ended = run.endedAgo {
                    span += ", ended \(age(ended)) ago" + (run.exitCode.map { ", exit \($0)" } ?? "")
                } else {
                    span += ", running" + (run.idleAgo.map { ", idle for \(age($0))" } ?? "")
                }
                out += "  #\(run.id) \(span): \(run.finished) downloaded, \(run.unchanged) unchanged, \(run.failed) failed, \(run.handled) handled\n"
            }
        }
        return out
    }

    static func json(_ report: QueueReport, address: PostgresAddress) -> String {
        var object = JSONObject()
        object.add("queue", address.description)
        object.add("schema_version", report.schemaVersion)
        object.add("job", report.job.name)
        object.add("per_host", report.perHost)
        object.add("host_delay", report.hostDelay)
        object.add("max_downloads", report.maxDownloads)
        add(report.job, to: &object)
        let workerList = report.workers.map { worker -> String in
            var o = JSONObject()
            o.add("id", worker.id)
            o.add("hostname", worker.hostname)
            o.add("pid", worker.pid)
            o.add("state", worker.leaseExpired ? "lease expired" : "alive")
            o.add("started_ago", worker.startedAgo)
            o.add("heartbeat_ago", worker.heartbeatAgo)
            o.add("lease_left", worker.leaseLeft)
            o.add("running", worker.running)
            o.add("transferring", worker.transferring)
            o.add("held_ahead", worker.heldAhead)
            o.add("placing", worker.placing)
            return o.json
        }
        object.add("workers", json: "[" + workerList.joined(separator: ",") + "]")
        object.add("in_flight", report.inFlight)
        object.add("hosts_in_flight", report.hostsInFlight)
        let hostList = report.hosts.map { host -> String in
            var o = JSONObject()
            o.add("host", host.host)
            o.add("in_flight", host.inFlight)
            o.add("waiting", host.waiting)
            return o.json
        }
        object.add("hosts", json: "[" + hostList.joined(separator: ",") + "]")
        let failureList = report.failures.map { failure -> String in
            var o = JSONObject()
            o.add("url", RedactedURL.text(failure.url))
            o.add("last_error", failure.lastError)
            o.add("attempts", failure.attempts)
            o.add("ended_ago", failure.endedAgo)
            return o.json
        }
        object.add("failures", json: "[" + failureList.joined(separator: ",") + "]")
        let runList = report.runs.map { run -> String in
            var o = JSONObject()
            o.add("id", run.id)
            o.add("status", run.endedAgo == nil ? "running" : "ended")
            o.add("started_ago", run.startedAgo)
            o.add("ended_ago", run.endedAgo)
            o.add("idle_ago", run.idleAgo)
            o.add("exit_code", run.exitCode)
            o.add("finished", run.finished)
            o.add("unchanged", run.unchanged)
            o.add("failed", run.failed)
            o.add("handled", run.handled)
            o.add("done_worker", run.doneWorker)
            return o.json
        }
        object.add("runs", json: "[" + runList.joined(separator: ",") + "]")
        return object.json
    }

    // MARK: the job list

    static func text(_ list: QueueJobList, address: PostgresAddress) -> String {
        var out = "queue: \(Terminal.clean(address.description))\n"
        out += schemaLine(list.schemaVersion)
        guard !list.jobs.isEmpty else { return out + "jobs: none\n" }
        out += "jobs:\n"
        for job in list.jobs {
            let downloads = counts(job.counts)
            let paused = job.pausedAgo == nil ? "" : " (paused)"
            out += "  \(Terminal.clean(job.name))\(paused): \(downloads == "none" ? "no downloads" : downloads); workers: \(workers(alive: job.workersAlive, expired: job.workersExpired))\n"
        }
        return out
    }

    static func json(_ list: QueueJobList, address: PostgresAddress) -> String {
        var object = JSONObject()
        object.add("queue", address.description)
        object.add("schema_version", list.schemaVersion)
        let jobs = list.jobs.map { job -> String in
            var o = JSONObject()
            o.add("job", job.name)
            add(job, to: &o)
            return o.json
        }
        object.add("jobs", json: "[" + jobs.joined(separator: ",") + "]")
        return object.json
    }

    // MARK: parts

    /// The counts by status and the workers, as keys of `object`.
    private static func add(_ job: QueueJobSummary, to object: inout JSONObject) {
        for (name, count) in job.counts.named { object.add(name, count) }
        object.add("workers_alive", job.workersAlive)
        object.add("workers_expired", job.workersExpired)
        // `paused` is a count by status above: the job's own pause has keys
        // of its own (one object with one key twice is not JSON a strict
        // reader takes).
        object.add("job_paused", job.pausedAgo != nil)
        object.add("job_paused_ago", job.pausedAgo)
    }

    /// An older schema is read as it is; say that a worker will migrate it.
    private static func schemaLine(_ version: Int) -> String {
        version < QueueSchema.latest
            ? "schema: version \(version) (a worker of this dlpipe migrates it to \(QueueSchema.latest) when it starts)\n" : ""
    }

    /// "5 ready, 2 transferring, 24 held ahead, 10 finished": the counts
    /// that are not zero.
    private static func counts(_ counts: QueueCounts) -> String {
        let parts = counts.shown.filter { $0.count > 0 }.map { "\($0.count) \($0.name)" }
        return parts.isEmpty ? "none" : parts.joined(separator: ", ")
    }

    /// What a worker holds: "4 transferring, 20 held ahead, 1 placing"
    /// (the counts that are not zero), or "nothing held".
    static func held(_ worker: QueueWorkerStatus) -> String {
        let parts = [("transferring", worker.transferring), ("held ahead", worker.heldAhead), ("placing", worker.placing)]
            .filter { $0.1 > 0 }.map { "\($0.1) \($0.0)" }
        return parts.isEmpty ? "nothing held" : parts.joined(separator: ", ")
    }

    private static func workers(alive: Int64, expired: Int64) -> String {
        var parts: [String] = []
        if alive > 0 { parts.append("\(alive) alive") }
        if expired > 0 { parts.append("\(expired) lease expired") }
        return parts.isEmpty ? "none" : parts.joined(separator: ", ")
    }

    /// "12 s", "4 min", "2 h 5 min", "3 d 4 h": whole units, rounded down.
    static func age(_ seconds: Double) -> String {
        let whole = seconds.isFinite ? Int(max(0, seconds)) : 0
        switch whole {
        case ..<60: return "\(whole) s"
        case ..<3600: return "\(whole / 60) min"
        case ..<86400:
            let minutes = whole % 3600 / 60
            return "\(whole / 3600) h" + (minutes > 0 ? " \(minutes) min" : "")
        default:
            let hours = whole % 86400 / 3600
            return "\(whole / 86400) d" + (hours > 0 ? " \(hours) h" : "")
        }
    }
}
