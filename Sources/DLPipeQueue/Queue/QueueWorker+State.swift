import DLPipe

/// What the worker's threads share under `QueueWorker.state`: the claims it
/// holds and where each one is in its life (engine, ahead, paused, ended).
extension QueueWorker {
    struct State {
        /// Claims this worker holds, by row id: each one's life (token,
        /// host, phase, pause mark). The one place a claim's state is kept.
        private(set) var claims: [Int64: ClaimLife] = [:]
        /// Claims in the engine on a host slot (`ClaimLife.holdsSlot`).
        private(set) var transferring = 0
        /// Claims whose row goes back to running with the next cycle.
        private(set) var unparkingCount = 0
        /// Ends not reported yet.
        var ends: [ClaimEnd] = []
        /// Ends not reported yet whose rows still hold a host slot (their
        /// report gives it back), by host: counted in `freeSlots`.
        var endSlots: [String: Int] = [:]
        /// The order of the claims held ahead (phase `ahead`), by host, first
        /// claimed first: each waits for a transfer of its host to end and
        /// hand its slot over (`noteTransferEnded`).
        var ahead: [String: FirstInLine<ClaimedRequest>] = [:]
        var aheadCount = 0
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

        /// A claim of this worker's comes, under `token`, in `phase`.
        mutating func hold(_ id: Int64, token: Int64, host: String, phase: ClaimLife.Phase, row: ClaimedDownload? = nil) {
            if claims[id] != nil {
                // The queue hands out a row once per token: a bug if it
                // comes again while held. The new claim replaces the old.
                assertionFailure("claim \(id) held twice")
                _ = claims[id].map { old in
                    if old.holdsSlot { transferring -= 1 }
                    if old.pause.isUnparking { unparkingCount -= 1 }
                }
            }
            let life = ClaimLife(token: token, host: host, phase: phase, row: row)
            claims[id] = life
            if life.holdsSlot { transferring += 1 }
        }

        /// Moves claim `id` by `input`: `late` and `impossible` change
        /// nothing (an impossible one is reported: `ImpossibleClaimInputs`);
        /// nil when this worker does not hold the claim.
        @discardableResult
        mutating func apply(_ input: ClaimLife.Input, to id: Int64) -> ClaimLife.Step? {
            guard var life = claims[id] else { return nil }
            let before = life
            let step = life.step(input)
            switch step {
            case .moved:
                claims[id] = life
                transferring += (life.holdsSlot ? 1 : 0) - (before.holdsSlot ? 1 : 0)
                unparkingCount += (life.pause.isUnparking ? 1 : 0) - (before.pause.isUnparking ? 1 : 0)
            case .late: break
            case .impossible: ImpossibleClaimInputs.report(input, before)
            }
            return step
        }

        /// A held claim ends here (reported, or handed back to the queue):
        /// no longer this worker's; its report gives its slot back if it
        /// still holds one. Its life, nil when it was not held.
        @discardableResult
        mutating func letGo(_ id: Int64) -> ClaimLife? {
            guard let life = claims.removeValue(forKey: id) else { return nil }
            if life.holdsSlot { transferring -= 1 }
            if life.pause.isUnparking { unparkingCount -= 1 }
            if life.endGivesSlot { endSlots[life.host, default: 0] += 1 }
            return life
        }

        /// The token of held claim `id`.
        func token(_ id: Int64) -> Int64? { claims[id]?.token }

        /// Held claims whose slot goes back with the next report: their tokens.
        var slotsToGive: [Int64: Int64] {
            claims.compactMapValues { if case .transferEnded(giving: true, _) = $0.phase { $0.token } else { nil } }
        }

        /// Claims started on a slot handed over, whose row takes the slot
        /// with the next report: their tokens.
        var taking: [Int64: Int64] {
            claims.compactMapValues { $0.phase == .inEngine(taking: true) ? $0.token : nil }
        }

        /// Parked claims resumed, whose rows go back to running with the
        /// next cycle: their tokens, taken (each is then marked unparked).
        mutating func takeUnparking() -> [(id: Int64, token: Int64)] {
            guard unparkingCount > 0 else { return [] }
            let ids = claims.filter { $0.value.pause.isUnparking }.keys.sorted()
            return ids.compactMap { id in
                apply(.unparked, to: id)
                return claims[id].map { (id, $0.token) }
            }
        }

        /// The slot of claim `id` (its transfer ended) goes to the next
        /// claim held ahead for its host, if any: that claim, to start now.
        /// Whether the input moved the claim (its transfer had not ended yet).
        mutating func handOver(from id: Int64, at now: Double) -> (moved: Bool, next: ClaimedRequest?) {
            // A slot its row holds in the database is given back with the
            // next cycle (its successor's row takes one in the same
            // statement). A slot it was handed and never took: the row it
            // came from gives that one back (`ClaimLife.stepPhase`).
            guard apply(.transferEnded(at: now), to: id) == .moved, let host = claims[id]?.host else { return (false, nil) }
            // The next in its host's line, popped in place. Nobody to take
            // the slot over now: a claim that comes ahead before the cycle
            // sends this may (`startOnFreeSlots`).
            guard !isHeld(host, at: now), let next = popAhead(host) else { return (true, nil) }
            apply(.handedOver, to: Int64(next.number))
            return (true, next)
        }

        /// The first claim held ahead for `host`, out of its line.
        mutating func popAhead(_ host: String) -> ClaimedRequest? {
            guard let next = ahead[host]?.popFirst() else { return nil }
            if ahead[host]?.isEmpty == true { ahead[host] = nil }
            aheadCount -= 1
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
            for life in claims.values where life.holdsSlot { hosts.insert(life.host) }
            return hosts
        }

        /// Claims held ahead for hosts where no transfer of this worker
        /// runs, so none will hand them a slot: out of `ahead`, still held
        /// (`stranded`) until the queue gives them a slot (`promoted`) or
        /// takes them back (`released`).
        mutating func strandedAhead() -> [(claim: ClaimedRequest, token: Int64, host: String)] {
            guard aheadCount > 0 else { return [] }
            let live = slotHosts
            var stranded: [(claim: ClaimedRequest, token: Int64, host: String)] = []
            for (host, waiting) in ahead where !live.contains(host) {
                for claim in waiting.elements {
                    let id = Int64(claim.number)
                    apply(.stranded, to: id)
                    if let token = token(id) { stranded.append((claim, token, host)) }
                }
                aheadCount -= waiting.count
                ahead[host] = nil
            }
            return stranded
        }

        /// A stranded claim got a slot: it transfers now.
        mutating func promoted(_ id: Int64) {
            apply(.promoted, to: id)
        }

        /// A stranded claim went back to ready: no longer held.
        mutating func released(_ id: Int64) {
            letGo(id)
        }
    }
}
