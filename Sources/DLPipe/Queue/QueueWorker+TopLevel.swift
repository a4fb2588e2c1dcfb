/// The job's top-level adds: sent once per run, not once per worker
/// (`SharedQueue.queuedTopLevel`, docs/scale-out.md "Top-level adds").
extension QueueWorker {
    package func addTopLevel(_ requests: [DownloadRequest]) -> [Int] {
        let rows = requests.map(QueuedRequestCodec.encode)
        let digest = SharedQueue.topLevelDigest(rows)
        // Queued whole by a worker before: their ids, and nothing is sent.
        // Any failure here only costs sending them (idempotent).
        let found = try? addLink.withLock { link throws(PostgresError) in
            try link.run(patience: settings.outage) { connection throws(PostgresError) in
                try queue.queuedTopLevel(rows, digest: digest, run: run, on: connection)
            }
        }
        if let found = found ?? nil {
            signal()
            return found.map { Int($0) }
        }
        let ids = send(rows)
        // Recorded only once every piece was queued and none was refused: a
        // worker that dies in the middle, or a run that was full, leaves no
        // record, and the next worker sends them all again.
        if !ids.contains(0) {
            _ = try? addLink.withLock { link throws(PostgresError) in
                try link.run(patience: settings.outage) { connection throws(PostgresError) in
                    try queue.recordTopLevel(digest: digest, run: run, worker: worker, on: connection)
                }
            }
        }
        return ids
    }
}
