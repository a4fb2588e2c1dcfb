/// Slots noted to go back that a claim held ahead may still take over.
///
/// A transfer that ends hands its slot to the next claim held ahead for its
/// host (`handOver`). When none is held, the slot is noted to go back with
/// the next cycle; claims ahead that the cycle running now brings would then
/// find their host without a transfer of this worker, wait a cycle for the
/// queue to give them slots (`strandedAhead`, `promoteAhead`), and leave the
/// slots idle meanwhile: with small files and one host, a third of a cycle's
/// claims came that way. So a claim ahead that comes while such a slot is
/// still unsent takes it over, exactly as at a hand-over: the row that ended
/// gives the slot back and the new one takes it in the same report, the
/// give-back sent no earlier than the take (`takeGives` comes first in a
/// cycle), so the host's count never falls below its transfers.
extension QueueWorker.State {
    /// The slots to give back with this cycle; from now on no claim ahead
    /// takes one of them over (they are on their way to the queue).
    mutating func takeGives() -> [Int64: Int64] {
        freeGives.removeAll()
        return slotsToGive.take()
    }

    /// Starts claims held ahead on the free slots of their hosts, first
    /// claimed first: the claims to hand to the engine now.
    mutating func startOnFreeGives() -> [ClaimedRequest] {
        guard aheadCount > 0, !freeGives.isEmpty else { return [] }
        var started: [ClaimedRequest] = []
        for id in freeGives.sorted() {
            guard let host = hostOf[id], var waiting = ahead[host], !waiting.isEmpty else { continue }
            let next = waiting.removeFirst()
            ahead[host] = waiting.isEmpty ? nil : waiting
            aheadCount -= 1
            let number = Int64(next.number)
            aheadRows[number] = nil
            slotFree.remove(number)
            if let token = held[number] { taking[number] = token }
            freeGives.remove(id)
            started.append(next)
        }
        return started
    }
}
