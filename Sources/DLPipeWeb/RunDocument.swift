import DLPipe
import Foundation

/// `/api/run`, the page's data (docs/operating.md, "The /api JSON").
enum RunDocument {
    /// Transfers listed at most (the page shows the first ones; counts cover all).
    static let transfersListed = 100

    static func json(
        _ header: RunHeader, _ model: RunModel, overall: ProgressMeter.Overall, throughput: [(at: Double, speed: Double)],
        at now: Double, start: Double
    ) -> [UInt8] {
        let f = overall.figures
        var transfers: [[String: Any]] = []
        for (id, t) in model.transfers.sorted(by: { $0.key.rawValue < $1.key.rawValue }).prefix(transfersListed) {
            let figures = model.meter.figures(of: id, at: now)
            transfers.append([
                "id": id.rawValue, "url": t.url, "name": t.name ?? NSNull(), "host": t.host, "attempt": t.attempt,
                "bytes": figures?.bytes ?? 0, "total": figures?.total ?? NSNull(),
                "speed": figures?.speed ?? NSNull(), "eta": figures?.eta ?? NSNull(),
            ])
        }
        let hosts: [[String: Any]] = model.hosts.sorted { $0.key < $1.key }.map {
            ["host": $0.key, "in_flight": max(0, $0.value.inFlight), "waiting": max(0, $0.value.waiting)]
        }
        let failures: [[String: Any]] = model.failures.reversed().map {
            ["url": $0.url, "kind": $0.kind, "message": $0.message, "status": $0.status ?? NSNull(), "attempt": $0.attempt, "at": $0.at]
        }
        let document: [String: Any] = [
            "title": header.title, "command": header.command, "pid": header.pid,
            "started_at": ISO8601DateFormatter().string(from: header.startedAt),
            "elapsed": now - start, "state": model.drained ? "drained" : "running",
            "counts": model.counts, "queued": max(0, model.waiting), "in_flight": model.transfers.count,
            "retries": model.retries, "received_bytes": model.receivedBytes,
            "files_done": overall.filesDone, "files_total": overall.filesTotal,
            "bytes": f.bytes, "total": f.total ?? NSNull(), "speed": f.speed ?? NSNull(), "eta": f.eta ?? NSNull(),
            "queue": header.queue.map { ["url": $0.url, "job": $0.job] } ?? NSNull(),
            "hosts": hosts, "transfers": transfers, "failures": failures,
            "throughput": throughput.map { ["at": $0.at, "speed": $0.speed] },
        ]
        let data = (try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])) ?? Data("{}".utf8)
        return Array(data)
    }
}
