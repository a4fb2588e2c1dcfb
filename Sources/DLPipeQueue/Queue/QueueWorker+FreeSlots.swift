import DLPipe

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
    /// How long a slot handed over may stay recorded under the row it came
    /// from, waiting for that row's end to move it (`takeSlots`). Its taker
    /// meanwhile transfers on a row the queue counts as held ahead: a
    /// take-back of this worker would count that attempt as never made.
    static let handOverWait = 0.1

    /// The slots to give back and those taken over, for the report of this
    /// cycle; taken with the cycle's ends, under the same lock.
    ///
    /// A slot handed over (given back by the row whose transfer ended, taken
    /// by the claim ahead that started on it) moved in the worker only: the
    /// queue's count of the host is right while both are left out, as a
    /// pair. Left out, they cost nothing when the giver's end comes soon:
    /// its end gives the slot back in its own report, and the taker's take
    /// goes with it (its give is no longer in `slotsToGive`, so it finds no
    /// pair). Sent at once, the give was a write of its own: with small
    /// files, for 4 in 10 files (their files waited 20 to 30 ms to be placed,
    /// longer than a cycle). A pair waits at most `handOverWait` after the
    /// give's transfer ended; which take of a host goes with which give does
    /// not matter to the count.
    mutating func takeSlots(now: Double) -> (gives: [Int64: Int64], taking: [Int64: Int64]) {
        endSlots.removeAll()
        var takes: [String: [Int64]] = [:]
        var toGive: [(id: Int64, token: Int64, host: String, endedAt: Double)] = []
        var takingNow: [Int64: Int64] = [:]
        for (id, life) in claims {
            switch life.phase {
            case .inEngine(taking: true):
                takes[life.host, default: []].append(id)
                takingNow[id] = life.token
            case .transferEnded(giving: true, let at): toGive.append((id, life.token, life.host, at))
            default: break
            }
        }
        var gives: [Int64: Int64] = [:]
        var keptTakes: Set<Int64> = []
        // Oldest first: their rows' ends are the nearest.
        toGive.sort { ($0.endedAt, $0.id) < ($1.endedAt, $1.id) }
        for give in toGive {
            let young = now - give.endedAt < Self.handOverWait
            if young, let take = takes[give.host]?.popLast() {
                keptTakes.insert(take)
            } else {
                gives[give.id] = give.token
            }
        }
        for id in gives.keys { apply(.slotGiven, to: id) }
        let sent = takingNow.filter { !keptTakes.contains($0.key) }
        for id in sent.keys { apply(.slotTaken, to: id) }
        return (gives, sent)
    }

    /// Slots of `host` that the queue counts as this worker's and that no
    /// transfer uses now.
    func freeSlots(_ host: String) -> Int { freeSlotsByHost()[host] ?? 0 }

    /// `freeSlots` of every host, in one pass over the claims.
    func freeSlotsByHost() -> [String: Int] {
        var free = endSlots
        for life in claims.values {
            switch life.phase {
            case .transferEnded(giving: true, _): free[life.host, default: 0] += 1
            case .inEngine(taking: true): free[life.host, default: 0] -= 1
            default: break
            }
        }
        return free
    }

    /// Starts claims held ahead on the free slots of their hosts, first
    /// claimed first: the claims to hand to the engine now.
    mutating func startOnFreeSlots() -> [ClaimedRequest] {
        guard aheadCount > 0, !(endSlots.isEmpty && !claims.values.contains { $0.phase.isGiving }) else { return [] }
        var started: [ClaimedRequest] = []
        let now = QueueClock.now()
        let freeByHost = freeSlotsByHost()
        for host in ahead.keys.sorted() where !isHeld(host, at: now) {
            let free = freeByHost[host] ?? 0
            guard free > 0 else { continue }
            for _ in 0..<free {
                guard let next = popAhead(host) else { break }
                apply(.handedOver, to: Int64(next.number))
                started.append(next)
            }
        }
        return started
    }
}
