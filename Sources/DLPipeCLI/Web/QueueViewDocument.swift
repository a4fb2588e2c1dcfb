import DLPipe
import DLPipeQueue
import DLPipeWeb
import Foundation

/// `/api/queue` of `dlpipe web --queue` (docs/operating.md, "The fleet's
/// view"): the documents `status --queue --json`, `queue failures --json`
/// and `queue runs --json` print, one per job, with what each worker
/// transfers and the throughput over time.
enum QueueViewDocument {
    /// `name`: the one job asked for (`--name`), said `missing` while the queue has none of that name.
    /// `fleet`: the last read (nil: none succeeded yet); `outage`: why the
    /// reads fail now, which marks it stale.
    static func json(
        _ fleet: QueueFleet?, address: PostgresAddress, name: String?, throughput: [String: [(at: Double, speed: Double)]],
        outage: QueueReadError? = nil
    ) -> String {
        var object = JSONObject()
        object.add("kind", "queue")
        object.add("queue", address.description)
        let time = ISO8601DateFormatter()
        object.add("generated_at", time.string(from: Date()))
        if let outage {
            object.add("error", outage.message)
            object.add("error_since", time.string(from: outage.since))
            object.add("stale", true)
            object.add("read_at", outage.lastRead.map { time.string(from: $0) })
        }
        guard let fleet else {
            object.add("state", "unread")
            object.add("jobs", json: "[]")
            return object.json
        }
        guard let list = fleet.list else {
            object.add("state", "no queue")
            object.add("jobs", json: "[]")
            return object.json
        }
        object.add("state", "ok")
        if let name, fleet.jobs.isEmpty { object.add("missing", name) }
        object.add("list", json: QueueStatusReport.json(list, address: address))
        let jobs = fleet.jobs.map { job -> String in
            var o = JSONObject()
            o.add("name", job.report.job.name)
            o.add("status", json: QueueStatusReport.json(job.report, address: address))
            o.add("failures", json: job.failures.first.map { QueueControlReport.failures($0, json: true) } ?? #"{"failures":[]}"#)
            o.add("earlier_failures", json: "[" + job.failures.dropFirst().map { QueueControlReport.failures($0, json: true) }.joined(separator: ",") + "]")
            o.add("runs", json: QueueControlReport.runs(job.history, json: true))
            o.add("transfers", json: "[" + job.transfers.map { transfer -> String in
                var t = JSONObject()
                t.add("worker", transfer.worker)
                t.add("id", transfer.id)
                t.add("url", RedactedURL.text(transfer.url))
                t.add("host", transfer.host)
                t.add("attempts", transfer.attempts)
                return t.json
            }.joined(separator: ",") + "]")
            o.add("throughput", json: "[" + (throughput[job.report.job.name] ?? []).map { sample -> String in
                var s = JSONObject()
                s.add("at", sample.at, decimals: 1)
                s.add("speed", sample.speed, decimals: 0)
                return s.json
            }.joined(separator: ",") + "]")
            return o.json
        }
        object.add("jobs", json: "[" + jobs.joined(separator: ",") + "]")
        return object.json
    }
}

/// `/metrics` of `dlpipe web --queue`: the fleet's figures read from the
/// database, one series per job (label `queue_job`: Prometheus keeps `job`
/// for its own scrape job).
enum QueueViewMetrics {
    static func text(_ fleet: QueueFleet) -> String {
        var out = up(1)
        func family(_ name: String, _ type: String, _ help: String, _ lines: (QueueFleet.Job) -> [String]) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for job in fleet.jobs { for line in lines(job) { out += name + line + "\n" } }
        }
        func labels(_ job: QueueFleet.Job, _ more: String = "") -> String {
            "{queue_job=\"\(RunMetrics.label(job.report.job.name))\"\(more)}"
        }
        family("dlpipe_downloads_total", "counter", "Downloads ended in the job's runs kept, by outcome (a purge of old runs lowers it).") { job in
            let sums: [(String, Int64)] = [
                ("finished", job.history.reduce(0) { $0 + $1.run.finished }), ("unchanged", job.history.reduce(0) { $0 + $1.run.unchanged }),
                ("skipped", job.history.reduce(0) { $0 + $1.skipped }), ("failed", job.history.reduce(0) { $0 + $1.run.failed }),
                ("handled", job.history.reduce(0) { $0 + $1.run.handled }), ("cancelled", job.history.reduce(0) { $0 + $1.cancelled }),
            ]
            return sums.map { labels(job, ",outcome=\"\($0.0)\"") + " \($0.1)" }
        }
        family("dlpipe_received_bytes_total", "counter", "Bytes of the files finished in the job's runs kept.") { job in
            [labels(job) + " \(job.history.reduce(0) { $0 + $1.bytes })"]
        }
        // `running` is the sum of transferring, held_ahead and placing: only
        // the parts, so that a sum() over the statuses counts each download once.
        family("dlpipe_queue_downloads", "gauge", "The job's downloads by status now (running told as its parts).") { job in
            job.report.job.counts.named.filter { $0.name != "running" }.map { labels(job, ",status=\"\($0.name)\"") + " \($0.count)" }
        }
        family("dlpipe_transfers_in_flight", "gauge", "Downloads transferring now, across every worker.") { job in
            [labels(job) + " \(job.report.job.counts.transferring)"]
        }
        family("dlpipe_queued", "gauge", "Downloads waiting in line: ready or scheduled.") { job in
            [labels(job) + " \(job.report.job.counts.ready + job.report.job.counts.scheduled)"]
        }
        family("dlpipe_host_in_flight", "gauge", "Transfers in flight by host, across every worker.") { job in
            job.report.hosts.map { labels(job, ",host=\"\(RunMetrics.label($0.host))\"") + " \($0.inFlight)" }
        }
        family("dlpipe_workers", "gauge", "The job's workers not stopped: alive, or dead with their lease expired.") { job in
            [labels(job, ",state=\"alive\"") + " \(job.report.job.workersAlive)",
             labels(job, ",state=\"expired\"") + " \(job.report.job.workersExpired)"]
        }
        family("dlpipe_worker_heartbeat_age_seconds", "gauge", "Seconds since each worker's last heartbeat.") { job in
            job.report.workers.map {
                labels(job, ",worker=\"\($0.id)\",hostname=\"\(RunMetrics.label($0.hostname))\",pid=\"\($0.pid)\"")
                    + " \(RunMetrics.number(($0.heartbeatAgo * 1000).rounded() / 1000))"
            }
        }
        family("dlpipe_job_paused", "gauge", "1 while `dlpipe queue pause` holds the job.") { job in
            [labels(job) + " \(job.report.job.pausedAgo == nil ? 0 : 1)"]
        }
        return out
    }

    /// The database could not be read: only `dlpipe_queue_up 0`.
    static func down() -> String { up(0) }

    private static func up(_ value: Int) -> String {
        "# HELP dlpipe_queue_up Whether the last read of the queue's database succeeded.\n# TYPE dlpipe_queue_up gauge\n"
            + "dlpipe_queue_up \(value)\n"
    }
}
