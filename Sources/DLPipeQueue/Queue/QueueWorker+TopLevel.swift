import DLPipe

/// The job's top-level adds: sent once per run, not once per worker
/// (`SharedQueue.queuedTopLevel`, docs/scale-out.md, "A run, `done` and the exit code").
extension QueueWorker {
    package func addTopLevel(_ requests: [DownloadRequest]) -> [Int] {
        let rows = requests.map(QueuedRequestCodec.encode)
        let digest = SharedQueue.topLevelDigest(rows)
        do {
            let ids = try addLink.withLock { link throws(PostgresError) -> [Int64] in
                // Run again whole on a new connection after a break: the lock
                // went with the old session, and every step is idempotent.
                try link.run(patience: settings.outage) { connection throws(PostgresError) -> [Int64] in
                    // Workers started together wait for the first to send them.
                    try queue.oneTopLevelAtATime(digest: digest, run: run, on: connection) { () throws(PostgresError) -> [Int64] in
                        // Queued whole by a worker before: their ids, nothing sent.
                        if let found = try queue.queuedTopLevel(rows, digest: digest, run: run, on: connection) {
                            return found
                        }
                        var ids: [Int64] = []
                        ids.reserveCapacity(rows.count)
                        // In pieces, as every add: one statement per thousand,
                        // after a first piece of a hundred when all have one
                        // priority, which the claim loop starts on while the
                        // rest go in (a piece of a thousand took 20 to 35 ms).
                        // With priorities that differ, a first piece that small
                        // would let a low one start before a high one is queued.
                        var start = 0
                        var size = rows.allSatisfy { $0.priority == rows[0].priority } ? 100 : 1000
                        while start < rows.count {
                            let piece = Array(rows[start..<min(rows.count, start + size)])
                            size = 1000
                            ids += try queue.enqueue(piece, run: run, on: connection)
                            start += piece.count
                            // Committed: the claim loop may take these while
                            // the next piece goes in (on its own connection).
                            signal()
                        }
                        // Recorded only once every piece was queued and none was
                        // refused: a worker that dies in the middle, or a run that
                        // was full, leaves no record, and the next one sends them all.
                        if !ids.contains(0) {
                            try queue.recordTopLevel(digest: digest, run: run, worker: worker, on: connection)
                        }
                        return ids
                    }
                }
            }
            signal()
            return ids.map { Int($0) }
        } catch {
            fatal("cannot queue downloads in the shared queue: \(error.message)", givingBack: !error.isConnectionLoss)
            return rows.map { _ in 0 }
        }
    }
}
