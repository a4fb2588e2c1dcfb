import DLPipe
import DLPipeLua
import Foundation

/// The JSON Lines form of events: `{"event": "...", "id": N, ...}`.
/// Keys are fixed per event type; absent values are omitted.
enum JSONLine {
    /// `meter`: a progress event's figures from the reporter's `ProgressMeter`.
    static func encode(_ event: DownloadEvent, meter: MeterReading? = nil) -> String {
        var object = JSONObject()
        switch event {
        case .queued(let d):
            object.add("event", "queued"); add(d, to: &object)
        case .response(let d, let r):
            object.add("event", "response"); add(d, to: &object)
            object.add("status", r.status)
            object.add("type", r.type)
            object.add("length", r.length)
            object.add("filename", r.filename)
            object.add("final_url", RedactedURL.text(r.url))
        case .progress(let d, let p):
            object.add("event", "progress"); add(d, to: &object)
            object.add("bytes", p.bytes)
            object.add("total", p.total)
            object.add("rate", p.rate.rounded())
            if let meter { add(meter, to: &object) }
        case .retrying(let d, let e, let delay):
            object.add("event", "retrying"); add(d, to: &object); add(e, to: &object)
            object.add("delay", delay)
        case .finished(let d, let f):
            object.add("event", "finished"); add(d, to: &object)
            // A memory download has no path (its body stays with the scripts).
            object.add("path", f.body == nil ? f.path : nil)
            object.add("bytes", f.bytes)
            object.add("sha256", f.sha256)
            object.add("type", f.type)
            object.add("seconds", f.seconds)
            object.add("unchanged", f.unchanged)
            // What a 304 was trusted on: validators, or (`--verify`) validators and content.
            if f.unchanged { object.add("checked", f.checkedBy) }
            // The job's meta as it was given to dl.add, for a manifest built
            // outside; only what JSON can hold (see docs/lua-api.md).
            if let meta = d.metaJSON { object.add("meta", json: meta) }
        case .failed(let d, let e):
            object.add("event", "failed"); add(d, to: &object); add(e, to: &object)
        case .handled(let d, let e):
            object.add("event", "handled"); add(d, to: &object); add(e, to: &object)
        case .skipped(let d, let reason):
            object.add("event", "skipped"); add(d, to: &object)
            object.add("reason", reason)
        case .paused(let d):
            object.add("event", "paused"); add(d, to: &object)
        case .cancelled(let d):
            object.add("event", "cancelled"); add(d, to: &object)
        case .stopped(let d):
            // Never written by the command line (RunDriver keeps stop events
            // from its reporters); here so that a library user can encode it.
            object.add("event", "stopped"); add(d, to: &object)
        case .drained(let s):
            object.add("event", "done")
            add(s, to: &object)
        }
        return object.json
    }

    /// A shared queue's worker's `done` event: its own counts, as without a
    /// queue (its summary line's), with its `worker` id and the `run`; the
    /// worker that ran the job's `done` handler and ended the run adds
    /// `job`, the job-wide counts that handler got. One line per run has
    /// `job`, whichever worker wrote it.
    /// `exitCode`: a `--follow` worker's run, which ends while it goes on.
    static func done(_ s: RunSummary, worker: Int64, run: Int64, job: RunSummary?, exitCode: Int? = nil) -> String {
        var object = JSONObject()
        object.add("event", "done")
        add(s, to: &object)
        object.add("worker", worker)
        object.add("run", run)
        if let exitCode { object.add("exit_code", exitCode) }
        if let job {
            var counts = JSONObject()
            // The queue keeps no content checks: only each worker counts its own.
            add(job, to: &counts, contentChecks: false)
            object.add("job", json: counts.json)
        }
        return object.json
    }

    private static func add(_ s: RunSummary, to object: inout JSONObject, contentChecks: Bool = true) {
        object.add("finished", s.finished)
        object.add("failed", s.failed)
        object.add("handled", s.handled)
        object.add("skipped", s.skipped)
        object.add("cancelled", s.cancelled)
        object.add("unchanged", s.unchanged)
        if contentChecks {
            object.add("verified", s.verified)
            object.add("replaced", s.replaced)
        }
        object.add("bytes", s.bytes)
        object.add("seconds", s.seconds)
    }

    /// A script's `dl.warn` line: `{"event":"warning","script":"job.lua:3","id":2,"message":"..."}`.
    static func warning(_ line: ScriptLine) -> String {
        var object = JSONObject()
        object.add("event", "warning")
        object.add("script", line.place)
        object.add("id", line.download)
        object.add("message", line.text)
        return object.json
    }

    /// The engine's warning about a download, in the shape of a script's
    /// (without `script`): `{"event":"warning","id":2,"message":"..."}`.
    static func warning(_ d: DownloadInfo, _ message: String) -> String {
        var object = JSONObject()
        object.add("event", "warning")
        object.add("id", d.id.rawValue)
        object.add("message", message)
        return object.json
    }

    /// A warning about the run as a whole (`RunSummary.warnings`):
    /// `{"event":"warning","message":"..."}`.
    static func warning(_ message: String) -> String {
        var object = JSONObject()
        object.add("event", "warning")
        object.add("message", message)
        return object.json
    }

    private static func add(_ d: DownloadInfo, to object: inout JSONObject) {
        object.add("id", d.id.rawValue)
        object.add("url", RedactedURL.text(d.url))
        object.add("name", d.name)
        object.add("attempt", d.attempt)
        object.add("parent", d.parent?.rawValue)
    }

    private static func add(_ e: DownloadError, to object: inout JSONObject) {
        object.add("kind", e.kind.rawValue)
        object.add("message", e.message)
        object.add("status", e.status)
        object.add("retry_after", e.retryAfter)
    }
}

/// Builds one JSON object's text key by key (keys are ours, values escaped).
struct JSONObject {
    private var text = "{"
    private var empty = true

    /// The object, closed.
    var json: String { text + "}" }

    /// A value that is JSON already (an array of objects, say).
    mutating func add(_ name: String, json value: String) {
        key(name)
        text += value
    }

    private mutating func key(_ name: String) {
        if !empty { text += "," }
        empty = false
        text += "\"\(name)\":"
    }

    mutating func add(_ name: String, _ value: String?) {
        guard let value else { return }
        key(name)
        text += JSONObject.quote(value)
    }

    mutating func add<T: BinaryInteger>(_ name: String, _ value: T?) {
        guard let value else { return }
        key(name)
        text += String(value)
    }

    mutating func add(_ name: String, _ value: Double?, decimals: Int = 3) {
        guard let value, value.isFinite else { return }
        key(name)
        text += String(format: "%.\(decimals)f", value)
    }

    mutating func add(_ name: String, _ value: Bool) {
        key(name)
        text += value ? "true" : "false"
    }

    static func quote(_ value: String) -> String {
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F || (0x2028...0x2029).contains(scalar.value) {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
