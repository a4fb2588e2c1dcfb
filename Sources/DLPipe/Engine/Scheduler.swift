/// Which queued download runs next: highest priority first, then first added,
/// never more than `concurrency` at once nor more than `perHost` against one host.
/// Pure bookkeeping; the engine loop tells it what started and what ended.
struct Scheduler {
    private struct Entry {
        let id: DownloadID
        let priority: Int
        let sequence: Int
    }

    let concurrency: Int
    let perHost: Int
    private var queues: [String: Heap<Entry>] = [:]
    private var activeByHost: [String: Int] = [:]
    /// The live heap entry of each queued id; older entries (withdrawn, then
    /// queued again) are stale and skipped when they surface.
    private var liveSequence: [DownloadID: Int] = [:]
    /// The host of each download holding a slot.
    private var runningHost: [DownloadID: String] = [:]
    private var sequence = 0

    /// Downloads holding a slot.
    var active: Int { runningHost.count }
    /// Downloads waiting for a slot.
    var queued: Int { liveSequence.count }

    init(concurrency: Int, perHost: Int) {
        self.concurrency = max(1, concurrency)
        self.perHost = max(1, perHost)
    }

    /// Puts a download in line.
    mutating func enqueue(_ id: DownloadID, host: String, priority: Int) {
        sequence += 1
        liveSequence[id] = sequence
        queues[host, default: Heap(by: Scheduler.runsFirst)].push(
            Entry(id: id, priority: priority, sequence: sequence))
    }

    /// Takes a queued download out of line (paused or cancelled before it ran).
    mutating func withdraw(_ id: DownloadID) {
        liveSequence[id] = nil
    }

    /// The next download to start, marking its slot taken; nil when none may start.
    mutating func next() -> DownloadID? {
        guard active < concurrency, !liveSequence.isEmpty else { return nil }
        var best: (host: String, entry: Entry)?
        // One pass over the hosts that have work: cheap for the usual few hosts.
        for host in Array(queues.keys) {
            guard activeByHost[host, default: 0] < perHost else { continue }
            guard let top = liveTop(of: host) else { continue }
            if best == nil || Scheduler.runsFirst(top, best!.entry) { best = (host, top) }
        }
        guard let (host, entry) = best else { return nil }
        _ = queues[host]?.pop()
        if queues[host]?.isEmpty == true { queues[host] = nil }
        liveSequence[entry.id] = nil
        runningHost[entry.id] = host
        activeByHost[host, default: 0] += 1
        return entry.id
    }

    /// A started download gave its slot back.
    mutating func finished(_ id: DownloadID) {
        guard let host = runningHost.removeValue(forKey: id) else { return }
        let left = activeByHost[host, default: 1] - 1
        activeByHost[host] = left > 0 ? left : nil
    }

    /// The first live entry of a host's heap, dropping stale ones on the way.
    private mutating func liveTop(of host: String) -> Entry? {
        while let top = queues[host]?.first {
            if liveSequence[top.id] == top.sequence { return top }
            _ = queues[host]?.pop()
        }
        queues[host] = nil
        return nil
    }

    private static func runsFirst(_ a: Entry, _ b: Entry) -> Bool {
        a.priority != b.priority ? a.priority > b.priority : a.sequence < b.sequence
    }
}
