/// Slots on their way back to the queue that a claim held ahead may still
/// take over.
///
/// A transfer that ends hands its slot to the next claim held ahead for its
/// host (`handOver`). When none is held, the slot is noted to go back with
/// the next cycle; claims ahead that the cycle running now brings would then
/// find their host without a transfer of this worker, wait a cycle for the
/// queue to give them slots (`strandedAhead`, `promoteAhead`), and leave the
/// slots idle meanwhile: with small files and one host, a cycle in seven
/// began with nothing transferring and dozens of claims held ahead.
///
/// What this worker has not reported yet tells how many such slots a host
/// has: the give-backs and ends noted (rows the queue counts as holding a
/// slot that no longer transfer) less the takes noted (transfers on a slot
/// handed over, which the queue does not count yet). A claim ahead started
/// on one is a take like a hand-over's, and all three go in the same report
/// (`takeSlots`), so the host's count in the queue never falls below the
/// transfers: it is exact after each report.
extension QueueWorker.State {
    /// The slots to give back and those taken over, for the report of this
    /// cycle; taken with the cycle's ends, under the same lock.
    mutating func takeSlots() -> (gives: [Int64: Int64], taking: [Int64: Int64]) {
        endSlots.removeAll()
        return (slotsToGive.take(), taking.take())
    }

    /// Slots of `host` that the queue counts as this worker's and that no
    /// transfer uses now.
    func freeSlots(_ host: String) -> Int {
        var free = endSlots[host] ?? 0
        for id in slotsToGive.keys where hostOf[id] == host { free += 1 }
        for id in taking.keys where hostOf[id] == host { free -= 1 }
        return free
    }

    /// Starts claims held ahead on the free slots of their hosts, first
    /// claimed first: the claims to hand to the engine now.
    mutating func startOnFreeSlots() -> [ClaimedRequest] {
        guard aheadCount > 0, !(slotsToGive.isEmpty && endSlots.isEmpty) else { return [] }
        var started: [ClaimedRequest] = []
        for host in ahead.keys.sorted() {
            let free = freeSlots(host)
            guard free > 0 else { continue }
            for _ in 0..<free {
                guard let next = ahead[host]?.popFirst() else { break }
                let number = Int64(next.number)
                aheadRows[number] = nil
                slotFree.remove(number)
                if let token = held[number] { taking[number] = token }
                started.append(next)
                aheadCount -= 1
            }
            if ahead[host]?.isEmpty == true { ahead[host] = nil }
        }
        return started
    }
}
