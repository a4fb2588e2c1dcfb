import Foundation

/// `/metrics` for a run: the Prometheus text exposition format 0.0.4, named
/// by Prometheus' conventions (docs/operating.md, "Metrics").
public enum RunMetrics {
    static func text(_ model: RunModel, startedAt: Date) -> String {
        var out = ""
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        family("dlpipe_downloads_total", "counter", "Downloads ended, by outcome.")
        for outcome in RunModel.outcomes {
            out += "dlpipe_downloads_total{outcome=\"\(outcome)\"} \(model.counts[outcome] ?? 0)\n"
        }
        family("dlpipe_received_bytes_total", "counter", "Body bytes received, every attempt included.")
        out += "dlpipe_received_bytes_total \(model.receivedBytes)\n"
        family("dlpipe_retries_total", "counter", "Attempts that failed and were tried again.")
        out += "dlpipe_retries_total \(model.retries)\n"
        family("dlpipe_transfers_in_flight", "gauge", "Downloads transferring now.")
        out += "dlpipe_transfers_in_flight \(model.transfers.count)\n"
        family("dlpipe_queued", "gauge", "Downloads open and not transferring: queued, held back by a host's limit, or waiting to retry.")
        out += "dlpipe_queued \(max(0, model.waiting))\n"
        let hosts = model.hosts.sorted { $0.key < $1.key }
        family("dlpipe_host_in_flight", "gauge", "Downloads transferring now, by host.")
        for (host, load) in hosts { out += "dlpipe_host_in_flight{host=\"\(label(host))\"} \(max(0, load.inFlight))\n" }
        family("dlpipe_host_waiting", "gauge", "Downloads of a host open and not transferring.")
        for (host, load) in hosts { out += "dlpipe_host_waiting{host=\"\(label(host))\"} \(max(0, load.waiting))\n" }
        family("dlpipe_download_duration_seconds", "histogram", "Seconds from a download's first attempt to its file in place.")
        var cumulative = 0
        for (index, bound) in RunModel.durationBuckets.enumerated() {
            cumulative += model.durationCounts[index]
            out += "dlpipe_download_duration_seconds_bucket{le=\"\(number(bound))\"} \(cumulative)\n"
        }
        cumulative += model.durationCounts[RunModel.durationBuckets.count]
        out += "dlpipe_download_duration_seconds_bucket{le=\"+Inf\"} \(cumulative)\n"
        out += "dlpipe_download_duration_seconds_sum \(number(model.durationSum))\n"
        out += "dlpipe_download_duration_seconds_count \(cumulative)\n"
        family("dlpipe_start_time_seconds", "gauge", "When the run started, in seconds since the Unix epoch.")
        out += "dlpipe_start_time_seconds \(number(startedAt.timeIntervalSince1970))\n"
        return out
    }

    /// A label value escaped as the format wants: backslash, double quote, line feed.
    public static func label(_ value: String) -> String {
        var out = ""
        for character in value {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }

    /// A float as Go's strconv parses it (Prometheus' parser).
    public static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
