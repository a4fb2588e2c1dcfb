/// Which queued download runs next: highest priority first; among hosts whose
/// next download has the same priority, round-robin (`HostTurns`), so that
/// input grouped by host still keeps many hosts busy at once. Never more than
/// `concurrency` at once nor more than `perHost` against one host, counted
/// against the host a transfer fetches from now: a redirect to another host
/// moves its slot (`hop`), and waits, first in that host's line, while the
/// host is full. Pure bookkeeping; the engine loop tells it what started and
/// what ended.
struct Scheduler {
    /// 24 bytes: a million queued downloads take 24 MB of heap entries.
    private struct Entry {
        let id: DownloadID
        let priority: Int
        /// The insertion order, times two, plus one for a started download
        /// whose redirect waits for a slot on this host.
        private let tag: Int
        var sequence: Int { tag >> 1 }
        var continuing: Bool { tag & 1 == 1 }

        init(id: DownloadID, priority: Int, sequence: Int, continuing: Bool) {
            self.id = id
            self.priority = priority
            self.tag = sequence << 1 | (continuing ? 1 : 0)
        }
    }

    let concurrency: Int
    /// A shared queue's worker follows the job's `per_host` (`setPerHost`).
    private(set) var perHost: Int
    private var queues: [String: Heap<Entry>] = [:]
    private var activeByHost: [String: Int] = [:]
    /// The queued ids, by number: an entry of an id not here is stale
    /// (withdrawn, or taken out of line) and skipped when it surfaces.
    private var queuedNumbers = NumberSet()
    /// Ids that may have a stale entry left in a heap (withdrawn, or a parked
    /// redirect that finished): rare, so only they pay for a table.
    private var mayHaveStale: Set<DownloadID> = []
    /// The live entry's sequence of such an id while it is queued again.
    private var liveSequence: [DownloadID: Int] = [:]
    /// The host of each download holding a slot.
    private var runningHost: [DownloadID: String] = [:]
    /// Started downloads waiting in a host's line after a redirect.
    private var parked: Set<DownloadID> = []
    private var turns = HostTurns()
    private var sequence = 0

    /// Slots held by a split download's further segments (`takeSegmentSlot`).
    private var segmentSlots = 0
    /// Slots held: by downloads, and by split downloads' further segments.
    var active: Int { runningHost.count + segmentSlots }
    /// Downloads waiting for a slot.
    var queued: Int { queuedNumbers.count }

    init(concurrency: Int, perHost: Int) {
        self.concurrency = max(1, concurrency)
        self.perHost = max(1, perHost)
    }

    /// Transfers per host from now on; those running go on.
    mutating func setPerHost(_ limit: Int) { perHost = max(1, limit) }

    /// Puts a download in line.
    mutating func enqueue(_ id: DownloadID, host: String, priority: Int) {
        push(id, host: host, priority: priority, continuing: false)
    }

    /// Takes a queued download out of line (paused or cancelled before it ran).
    mutating func withdraw(_ id: DownloadID) {
        dropFromLine(id)
        parked.remove(id)
    }

    /// `id` leaves the line; an entry of it left in a heap is stale from now on.
    private mutating func dropFromLine(_ id: DownloadID) {
        if queuedNumbers.remove(id.rawValue) { mayHaveStale.insert(id) }
        liveSequence[id] = nil
    }

    /// A running download now fetches from `host` (a redirect, or a start
    /// whose URL moved): its slot moves there. False when that host is full:
    /// the download then gives its slot back and waits at the front of the
    /// host's line; `next` hands it out again (`isParked` was true).
    mutating func hop(_ id: DownloadID, to host: String, priority: Int) -> Bool {
        guard let from = runningHost[id], from != host else { return true }
        release(id)
        if activeByHost[host, default: 0] < perHost {
            runningHost[id] = host
            activeByHost[host, default: 0] += 1
            return true
        }
        parked.insert(id)
        push(id, host: host, priority: priority, continuing: true)
        return false
    }

    /// The next download to start (or, for a parked one, to go on), marking
    /// its slot taken; nil when none may start.
    mutating func next() -> DownloadID? {
        guard active < concurrency, !queuedNumbers.isEmpty else { return nil }
        while let (host, priority) = turns.popFirst() {
            // A full host is offered again when one of its slots frees.
            guard activeByHost[host, default: 0] < perHost, let top = liveTop(of: host) else { continue }
            guard top.priority == priority || top.continuing else {
                turns.append(host, priority: top.priority)
                continue
            }
            _ = queues[host]?.pop()
            queuedNumbers.remove(top.id.rawValue)
            liveSequence[top.id] = nil
            runningHost[top.id] = host
            activeByHost[host, default: 0] += 1
            offer(host)  // to the back of the line: the next host goes first
            return top.id
        }
        return nil
    }

    /// Whether `id` was handed out by `next` to go on after a redirect (and
    /// not to start); clears the mark.
    mutating func resumesHop(_ id: DownloadID) -> Bool {
        parked.remove(id) != nil
    }

    /// A slot for one more segment of a split download from `host`: only one
    /// free under both limits while no download waits in line for one, so a
    /// split never keeps another download from starting. False when none is.
    mutating func takeSegmentSlot(host: String) -> Bool {
        guard queuedNumbers.isEmpty, active < concurrency, activeByHost[host, default: 0] < perHost else { return false }
        activeByHost[host, default: 0] += 1
        segmentSlots += 1
        return true
    }

    /// A segment's transfer ended: its slot goes back.
    mutating func releaseSegmentSlot(host: String) {
        segmentSlots -= 1
        let left = activeByHost[host, default: 1] - 1
        activeByHost[host] = left > 0 ? left : nil
        offer(host)
    }

    /// A started download gave its slot back (or, parked, its place in line).
    mutating func finished(_ id: DownloadID) {
        if parked.remove(id) != nil { dropFromLine(id) }
        release(id)
    }

    private mutating func release(_ id: DownloadID) {
        guard let host = runningHost.removeValue(forKey: id) else { return }
        let left = activeByHost[host, default: 1] - 1
        activeByHost[host] = left > 0 ? left : nil
        offer(host)
    }

    private mutating func push(_ id: DownloadID, host: String, priority: Int, continuing: Bool) {
        sequence += 1
        // Queued again while queued: the older entry is stale.
        if !queuedNumbers.insert(id.rawValue) { mayHaveStale.insert(id) }
        if !mayHaveStale.isEmpty && mayHaveStale.contains(id) { liveSequence[id] = sequence }
        queues[host, default: Heap(by: Scheduler.runsFirst)].push(
            Entry(id: id, priority: priority, sequence: sequence, continuing: continuing))
        offer(host)
    }

    /// Puts a host with live work and a free slot in line at its top's priority.
    private mutating func offer(_ host: String) {
        guard activeByHost[host, default: 0] < perHost, let top = liveTop(of: host) else { return }
        if !turns.isWaiting(host, at: top.priority) { turns.append(host, priority: top.priority) }
    }

    /// The first live entry of a host's heap, dropping stale ones on the way.
    private mutating func liveTop(of host: String) -> Entry? {
        while let top = queues[host]?.first {
            if isLive(top) { return top }
            _ = queues[host]?.pop()
        }
        queues[host] = nil
        return nil
    }

    /// Whether `entry` is its id's place in line (not one left by a withdraw).
    private func isLive(_ entry: Entry) -> Bool {
        guard queuedNumbers.contains(entry.id.rawValue) else { return false }
        guard !mayHaveStale.isEmpty, mayHaveStale.contains(entry.id) else { return true }
        return liveSequence[entry.id] == entry.sequence
    }

    /// A parked redirect first (it was started already), then priority, then
    /// insertion order.
    private static func runsFirst(_ a: Entry, _ b: Entry) -> Bool {
        if a.continuing != b.continuing { return a.continuing }
        return a.priority != b.priority ? a.priority > b.priority : a.sequence < b.sequence
    }
}
