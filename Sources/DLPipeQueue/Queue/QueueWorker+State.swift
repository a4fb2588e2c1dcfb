import DLPipe

/// What the worker's threads share under `QueueWorker.state`: the claims it
/// holds and where each one is in its life (engine, ahead, paused, ended).
extension QueueWorker {
    struct State {
        /// Claims this worker holds, by row id: their tokens.
        var held: [Int64: Int64] = [:]
        /// Ends not reported yet.
        var ends: [ClaimEnd] = []
        /// Held claims whose transfer ended: their host slot went back, or
        /// goes back with the next cycle (`slotsToGive`). The others transfer
        /// (or wait in the engine for a transfer) and hold a slot each.
        var slotFree: Set<Int64> = []
        /// Host slots to give back, by row id: their tokens. One whose
        /// transfer handed it over may wait for its row's end, which gives
        /// it back itself (`takeSlots`).
        var slotsToGive: [Int64: Int64] = [:]
        /// Monotonic time at which each held claim's transfer ended, by row
        /// id: how long a slot handed over has waited to go back.
        var transferEndedAt: [Int64: Double] = [:]
        /// Ends not reported yet whose rows still hold a host slot (their
        /// report gives it back), by host: counted in `freeSlots`.
        var endSlots: [String: Int] = [:]
        /// The host of each held claim, by row id.
        var hostOf: [Int64: String] = [:]
        /// Claims held ahead, by host, first claimed first: not in the
        /// engine yet, no slot; each waits for a transfer of its host to end
        /// and hand its slot over (`noteTransferEnded`). In `slotFree`.
        var ahead: [String: FirstInLine<ClaimedRequest>] = [:]
        var aheadCount = 0
        /// The queue's rows of the claims in `ahead`, by row id (what a
        /// cancel of one reports).
        var aheadRows: [Int64: ClaimedDownload] = [:]
        /// Claims started on a slot handed over, whose row takes the slot
        /// with the next cycle, by row id: their tokens.
        var taking: [Int64: Int64] = [:]
        var wake = false
        var stopping = false
        /// Monotonic time until which a file may be placed (lease, less a margin).
        var placeUntil: Double = 0
        var lastAcknowledged: Double = 0
        var leaseLost = false
        /// Something this worker's look at the run waits on changed: its
        /// engine asked `drained`, or the run ended (`lookIsDue`).
        var lookWanted = false
        /// The last look found a host of the job with downloads due and
        /// nothing in flight: claims held ahead give way (`yieldAhead`).
        var hostsStarve = false
        /// Monotonic time of the last look at the run.
        var lastLook: Double = 0
        /// The engine's cap of transfers per host: the job's `per_host` as
        /// this worker's last claim read it.
        var enginePerHost = 0
        /// Hosts a server's Retry-After holds back for the whole job, as
        /// a worker's report told (a NOTIFY, its own too): until when, on
        /// `QueueClock`. No claim held ahead takes a slot of theirs over
        /// meanwhile; each went back to ready once stranded.
        var heldUntil: [String: Double] = [:]
        /// Retry-After holds this worker's engine got that no report has
        /// carried to the queue yet, by the download that got it: its host
        /// (as the engine holds it) and until when (`QueueClock`). Claims the
        /// queue hands out meanwhile may be of that host, as its `next_at`
        /// does not say so yet: they must not lift the engine's hold.
        var unreportedHolds: [Int64: (host: String, until: Double)] = [:]
        /// Resumes this worker passed on to the holders of their downloads
        /// (`forward`), counted for the look after `done`.
        var resumesPassedOn = 0
        /// Held claims paused in the engine (`QueueWorker+Pause.swift`).
        var paused: Set<Int64> = []
        /// Those of `paused` whose rows the queue shows as paused.
        var parked: Set<Int64> = []
        /// Parked claims resumed in the engine, whose rows go back to
        /// running with the next cycle: their tokens.
        var unparking: [Int64: Int64] = [:]

        /// Held claims that hold a host slot: transferring, or waiting in
        /// the engine for a transfer.
        var transferring: Int { held.count - slotFree.count }

        /// A held claim ends here (reported, or handed back to the queue):
        /// its report gives its slot back if it still holds one.
        mutating func letGo(_ id: Int64) {
            let transferred = !slotFree.contains(id)
            slotFree.remove(id)
            let gives = slotsToGive.removeValue(forKey: id) != nil
            // Ended before its row took the slot it was handed: it takes
            // none, and the row it came from gives it back.
            let took = taking.removeValue(forKey: id) != nil
            // Its row holds a slot that its end gives back: one noted to go
            // back, or the one it still transferred on (its own).
            if let host = hostOf[id], gives || (transferred && !took) { endSlots[host, default: 0] += 1 }
            hostOf[id] = nil
            transferEndedAt[id] = nil
            paused.remove(id)
            parked.remove(id)
            unparking[id] = nil
        }

        /// The slot of claim `id` (its transfer ended) goes to the next
        /// claim held ahead for its host, if any: that claim, to start now.
        mutating func handOver(from id: Int64, token: Int64, at now: Double) -> ClaimedRequest? {
            transferEndedAt[id] = now
            if taking.removeValue(forKey: id) == nil {
                // A slot its row holds in the database: given back with the
                // next cycle (its successor's row takes one in the same
                // statement). A slot it was handed and never took: the row
                // it came from gives that one back.
                slotsToGive[id] = token
            }
            // The next in its host's line, popped in place. Nobody to take
            // the slot over now: a claim that comes ahead before the cycle
            // sends this may (`startOnFreeSlots`).
            guard let host = hostOf[id], !isHeld(host, at: now), let next = ahead[host]?.popFirst() else { return nil }
            if ahead[host]?.isEmpty == true { ahead[host] = nil }
            aheadCount -= 1
            let number = Int64(next.number)
            aheadRows[number] = nil
            slotFree.remove(number)
            if let nextToken = held[number] { taking[number] = nextToken }
            return next
        }

        /// The hosts of `unreportedHolds` still held at `now`.
        mutating func unreportedHeldHosts(at now: Double) -> Set<String> {
            guard !unreportedHolds.isEmpty else { return [] }
            unreportedHolds = unreportedHolds.filter { $0.value.until > now }
            return Set(unreportedHolds.values.map(\.host))
        }

        /// Whether a Retry-After holds `host` back for the job at `now`.
        mutating func isHeld(_ host: String, at now: Double) -> Bool {
            guard let until = heldUntil[host] else { return false }
            if now < until { return true }
            heldUntil[host] = nil
            return false
        }

        /// Hosts of the claims that hold a slot (transferring, or waiting in
        /// the engine for a transfer).
        var slotHosts: Set<String> {
            var hosts = Set<String>()
            for id in held.keys where !slotFree.contains(id) {
                if let host = hostOf[id] { hosts.insert(host) }
            }
            return hosts
        }

        /// Claims held ahead for hosts where no transfer of this worker
        /// runs, so none will hand them a slot: out of `ahead`, still held
        /// (and in `slotFree`) until the queue gives them a slot
        /// (`promoted`) or takes them back (`released`).
        mutating func strandedAhead() -> [(claim: ClaimedRequest, token: Int64, host: String)] {
            guard aheadCount > 0 else { return [] }
            let live = slotHosts
            var stranded: [(claim: ClaimedRequest, token: Int64, host: String)] = []
            for (host, waiting) in ahead where !live.contains(host) {
                for claim in waiting.elements {
                    if let token = held[Int64(claim.number)] { stranded.append((claim, token, host)) }
                    aheadRows[Int64(claim.number)] = nil
                }
                aheadCount -= waiting.count
                ahead[host] = nil
            }
            return stranded
        }

        /// A stranded claim got a slot: it transfers now.
        mutating func promoted(_ id: Int64) {
            slotFree.remove(id)
        }

        /// A stranded claim went back to ready: no longer held.
        mutating func released(_ id: Int64) {
            held[id] = nil
            letGo(id)
        }
    }
}
