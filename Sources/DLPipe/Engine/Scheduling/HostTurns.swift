/// Whose turn it is among the hosts with ready work: a ring per priority, the
/// highest priority first, round-robin among the hosts of one priority.
///
/// A host is in at most one ring (its `token` says which entry is live; older
/// entries are skipped when they surface), so a pick costs O(1) amortised plus
/// O(log p) over the p distinct priorities in use (usually one).
struct HostTurns {
    private var rings: [Int: HostRing] = [:]
    /// Priorities with a ring, highest first (may hold ones whose ring emptied).
    private var priorities = Heap<Int>(by: >)
    private var inHeap: Set<Int> = []
    /// The live ring entry of each host in line: its priority and token.
    private var place: [String: (priority: Int, token: Int)] = [:]
    private var tokens = 0

    /// Whether `host` is in line at `priority`.
    func isWaiting(_ host: String, at priority: Int) -> Bool { place[host]?.priority == priority }

    /// Puts `host` at the back of the ring of `priority` (out of any other).
    mutating func append(_ host: String, priority: Int) {
        tokens += 1
        place[host] = (priority, tokens)
        rings[priority, default: HostRing()].append(host, token: tokens)
        if inHeap.insert(priority).inserted { priorities.push(priority) }
    }

    /// Takes the host whose turn it is, with the priority it was in line at.
    mutating func popFirst() -> (host: String, priority: Int)? {
        while let priority = priorities.first {
            guard let (host, token) = rings[priority]?.popFirst() else {
                rings[priority] = nil
                inHeap.remove(priority)
                _ = priorities.pop()
                continue
            }
            guard place[host]?.token == token else { continue }  // moved or taken since
            place[host] = nil
            return (host, priority)
        }
        return nil
    }
}

/// A first-in first-out line of hosts, with the token of each entry.
private struct HostRing {
    private var items: [(host: String, token: Int)] = []
    private var head = 0

    mutating func append(_ host: String, token: Int) { items.append((host, token)) }

    mutating func popFirst() -> (String, Int)? {
        guard head < items.count else { return nil }
        let item = items[head]
        head += 1
        // Drop the consumed front now and then, so the line never grows with
        // the number of picks.
        if head >= 1024 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return item
    }
}
