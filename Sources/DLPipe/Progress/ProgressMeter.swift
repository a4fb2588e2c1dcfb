/// The figures of a run's progress, from its events: files done of the files
/// known so far, bytes done of the total when every size is known, and a
/// speed and ETA over a sliding window (`RateWindow`), for the run and for
/// each transfer. The terminal's bars and `--json`'s progress events read the
/// same figures from it. Pure: the caller gives each event's time (a
/// monotonic clock), so that it is tested without one.
package struct ProgressMeter: Sendable {
    /// One download's or the whole run's figures at a moment.
    package struct Figures: Sendable, Hashable {
        /// Bytes so far (a resumed download's kept bytes included).
        package var bytes: Int64
        /// The size when known (for the run: when every file's is).
        package var total: Int64?
        /// Bytes per second received over the window; nil before there is an estimate.
        package var speed: Double?
        /// Seconds left at that speed, when the total is known and the speed is not 0.
        package var eta: Double?
    }

    /// The run's figures with its file counts.
    package struct Overall: Sendable, Hashable {
        package var filesDone: Int
        /// Files known so far: queued, in flight and done (a job may add more).
        package var filesTotal: Int
        package var figures: Figures
    }

    private struct Transfer: Sendable {
        var bytes: Int64
        var total: Int64?
        var window: RateWindow
    }

    private var transfers: [DownloadID: Transfer] = [:]
    private var queued = 0
    private var done = 0
    private var finishedBytes: Int64 = 0
    /// Sums over `transfers`, kept as they change: the run's figures are read
    /// on every progress event, on the engine thread, with thousands in flight.
    private var activeBytes: Int64 = 0
    private var activeSizes: Int64 = 0
    private var unsized = 0
    /// Bytes received by every transfer of the run, for the run's speed; it
    /// starts at the first response (the time before it, resolving and
    /// connecting, would read as a slow start).
    private var received: RateWindow?
    private let span: Double

    /// A meter whose speeds are averaged over `span` seconds.
    package init(span: Double = 5) {
        self.span = span
    }

    package mutating func record(_ event: DownloadEvent, at time: Double) {
        switch event {
        case .queued:
            queued += 1
        case .response(let d, let r):
            // A new attempt starts over from what it kept (a resume) or from 0.
            let kept = r.resumedFrom ?? 0
            forget(d.id)
            put(Transfer(bytes: kept, total: r.length, window: RateWindow(start: time, count: kept, span: span)), d.id)
            if received == nil { received = RateWindow(start: time, span: span) }
        case .progress(let d, let p):
            guard var transfer = forget(d.id) else { return }
            let moved = max(0, p.bytes - transfer.bytes)
            transfer.bytes = p.bytes
            transfer.total = p.total
            transfer.window.record(p.bytes, at: time)
            put(transfer, d.id)
            if moved > 0, let count = received?.count { received?.record(count + moved, at: time) }
        default:
            guard event.isTerminal, let d = event.download else { return }
            done += 1
            if case .finished(_, let f) = event { finishedBytes += f.bytes }
            forget(d.id)
        }
    }

    private mutating func put(_ transfer: Transfer, _ id: DownloadID) {
        transfers[id] = transfer
        activeBytes += transfer.bytes
        if let total = transfer.total { activeSizes += total } else { unsized += 1 }
    }

    /// Takes a transfer out of the table and of the sums.
    @discardableResult
    private mutating func forget(_ id: DownloadID) -> Transfer? {
        guard let transfer = transfers.removeValue(forKey: id) else { return nil }
        activeBytes -= transfer.bytes
        if let total = transfer.total { activeSizes -= total } else { unsized -= 1 }
        return transfer
    }

    /// The download's figures at `now`; nil when it has no response yet or has ended.
    package func figures(of id: DownloadID, at now: Double) -> Figures? {
        guard let transfer = transfers[id] else { return nil }
        let eta = transfer.total.flatMap { transfer.window.eta(remaining: $0 - transfer.bytes, at: now) }
        return Figures(bytes: transfer.bytes, total: transfer.total, speed: transfer.window.rate(at: now), eta: eta)
    }

    /// The run's figures at `now`.
    package func overall(at now: Double) -> Overall {
        let bytes = finishedBytes + activeBytes
        // A download without a response yet has no size: the total is not known.
        let total = unsized == 0 && queued - done <= transfers.count ? finishedBytes + activeSizes : nil
        var eta = total.flatMap { received?.eta(remaining: $0 - bytes, at: now) }
        // The run ends no sooner than its slowest transfer: a fast file that
        // just ended still counts in the run's window, and would have the run
        // end before its last file can. (In flight only: bounded by -j.)
        if let runETA = eta {
            let slowest = transfers.values.compactMap { t in t.total.flatMap { t.window.eta(remaining: $0 - t.bytes, at: now) } }.max()
            eta = max(runETA, slowest ?? 0)
        }
        let figures = Figures(bytes: bytes, total: total, speed: received?.rate(at: now), eta: eta)
        return Overall(filesDone: done, filesTotal: max(queued, done), figures: figures)
    }
}
