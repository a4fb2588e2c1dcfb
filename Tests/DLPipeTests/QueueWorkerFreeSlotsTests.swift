import Testing

@testable import DLPipe
@testable import DLPipeQueue

/// A claim held ahead that comes while a slot of its host is on its way back
/// to the queue (its transfer ended with nobody held ahead, and the report
/// is not sent) takes the slot over, as at a hand-over; one that comes after
/// the cycle took its slots does not. The count behind it: give-backs and
/// ends noted, less takes noted (`freeSlots`).
@Suite struct QueueWorkerFreeSlotsTests {
    private func request(_ number: Int) -> ClaimedRequest {
        ClaimedRequest(number: number, request: DownloadRequest(url: "http://a.test/\(number)"))
    }

    /// Claim `number` transferring on a slot of a.test.
    private func transferring(_ state: inout QueueWorker.State, _ number: Int64) {
        state.hold(number, token: 100 + number, host: "a.test", phase: .inEngine(taking: false))
    }

    /// Claims `numbers` come ahead for a.test (as `hold` keeps them).
    private func holdAhead(_ state: inout QueueWorker.State, _ numbers: [Int]) {
        for number in numbers {
            state.hold(Int64(number), token: Int64(100 + number), host: "a.test", phase: .ahead)
            state.ahead["a.test", default: FirstInLine()].append(request(number))
            state.aheadCount += 1
        }
    }

    /// The engine says claim `id`'s transfer ended (`noteTransferEnded`),
    /// at monotonic time `now`.
    private func transferEnded(_ state: inout QueueWorker.State, _ id: Int64, at now: Double = 0) -> Int? {
        state.handOver(from: id, at: now).next?.number
    }

    /// Past the wait of a pair handed over: everything noted goes in the report.
    private let late = QueueWorker.State.handOverWait + 1

    @Test func aClaimAheadTakesOverASlotNotYetGivenBack() {
        var state = QueueWorker.State()
        transferring(&state, 1)
        #expect(transferEnded(&state, 1) == nil)
        holdAhead(&state, [2, 3])
        #expect(state.freeSlots("a.test") == 1)
        #expect(state.startOnFreeSlots().map(\.number) == [2], "one slot, the first claimed")
        #expect(state.taking == [2: 102] && state.slotsToGive == [1: 101], "given back and taken in one report")
        #expect(state.transferring == 1 && state.ahead["a.test"]?.elements.map(\.number) == [3])
        #expect(state.startOnFreeSlots().isEmpty, "a slot is taken over once")
        // Handed over, not yet waited for long: the pair waits for 1's end.
        #expect(state.takeSlots(now: 0) == ([:], [:]))
        #expect(state.takeSlots(now: late) == ([1: 101], [2: 102]), "1's end is late: both go now")
    }

    /// Another worker's Retry-After holds a.test back (its NOTIFY came):
    /// a transfer that ends hands its slot to no claim held ahead, and a
    /// claim ahead takes no free slot over, until the hold ends.
    @Test func aHeldHostHandsNoSlotOver() {
        var state = QueueWorker.State()
        transferring(&state, 1)
        holdAhead(&state, [2])
        state.heldUntil["a.test"] = 10
        #expect(transferEnded(&state, 1, at: 5) == nil, "held at 5")
        #expect(state.slotsToGive == [1: 101], "its slot goes back to the queue")
        state.heldUntil["a.test"] = QueueClock.now() + 60
        #expect(state.startOnFreeSlots().isEmpty)
        #expect(state.ahead["a.test"]?.elements.map(\.number) == [2], "still held ahead: stranded, then released")
        transferring(&state, 3)
        state.heldUntil["a.test"] = 10
        #expect(transferEnded(&state, 3, at: 11) == 2, "the hold ended at 10")
        #expect(state.heldUntil["a.test"] == nil)
    }

    @Test func noTakeOverOnceTheCycleTookTheSlots() {
        var state = QueueWorker.State()
        transferring(&state, 1)
        #expect(transferEnded(&state, 1) == nil)
        #expect(state.takeSlots(now: 0) == ([1: 101], [:]), "no taker: the slot goes back at once")
        holdAhead(&state, [2])
        #expect(state.freeSlots("a.test") == 0 && state.startOnFreeSlots().isEmpty)
    }

    /// 1 hands its slot to 2, 2 ends before the report (its row never took
    /// it): the slot is free again, given back by 1's row.
    @Test func aSlotHandedOverThatEndedIsFreeAgain() {
        var state = QueueWorker.State()
        transferring(&state, 1)
        holdAhead(&state, [2])
        #expect(transferEnded(&state, 1) == 2)
        #expect(state.freeSlots("a.test") == 0)
        #expect(transferEnded(&state, 2) == nil)
        #expect(state.slotsToGive == [1: 101] && state.taking.isEmpty && state.freeSlots("a.test") == 1)
        holdAhead(&state, [3])
        #expect(state.startOnFreeSlots().map(\.number) == [3])
        #expect(state.freeSlots("a.test") == 0)
    }

    /// A small file often ends (placed and reported as finished) before the
    /// cycle is over: its end gives the slot back, and a claim ahead that
    /// comes before that end is sent takes it over. An end whose slot went
    /// back already, or whose row never took one, frees none.
    @Test func anEndNotYetReportedFreesTheSlotItsRowHolds() {
        var state = QueueWorker.State()
        transferring(&state, 1)
        #expect(transferEnded(&state, 1) == nil)
        state.letGo(1)
        #expect(state.slotsToGive.isEmpty && state.endSlots == ["a.test": 1])
        transferring(&state, 4)
        state.letGo(4)  // failed while it transferred: its own slot goes back with its end
        #expect(state.freeSlots("a.test") == 2)
        holdAhead(&state, [2, 3, 5])
        #expect(state.startOnFreeSlots().map(\.number) == [2, 3])

        // 2 and 3 run on slots their rows do not hold yet: their ends free none.
        state.letGo(2)
        #expect(state.freeSlots("a.test") == 1, "3 still runs on one of the two; 2's went back")
        _ = state.takeSlots(now: late)
        #expect(state.freeSlots("a.test") == 0 && state.endSlots.isEmpty)
    }

    /// 1 hands its slot to 2. The queue's count is right while neither is
    /// written (1's row holds the slot 2 transfers on), and 1's end gives the
    /// slot back itself: 2's take goes with that end, and 1's row is written
    /// once, not twice.
    @Test func aSlotHandedOverMovesWithTheGiversEnd() {
        var state = QueueWorker.State()
        transferring(&state, 1)
        holdAhead(&state, [2])
        #expect(transferEnded(&state, 1, at: 10) == 2)
        #expect(state.takeSlots(now: 10.05) == ([:], [:]), "the pair waits")
        #expect(state.slotsToGive == [1: 101] && state.taking == [2: 102] && state.freeSlots("a.test") == 0)

        state.letGo(1)  // 1's file placed: its end is in this cycle's report
        #expect(state.freeSlots("a.test") == 0, "the slot 1's row holds is the one 2 transfers on")
        #expect(state.takeSlots(now: 10.06) == ([:], [2: 102]), "2 takes the slot 1's end gives back")
        #expect(state.slotsToGive.isEmpty && state.taking.isEmpty && state.freeSlots("a.test") == 0)
    }

    /// Two slots handed over and one given back with nobody to take it: the
    /// lone give goes now (another worker may use it), the pairs wait; a
    /// give whose pair's wait is over goes with its take.
    @Test func onlyPairsWaitAndNotForLong() {
        var state = QueueWorker.State()
        for id: Int64 in [1, 2, 3] { transferring(&state, id) }
        holdAhead(&state, [4, 5])
        #expect(transferEnded(&state, 1, at: 0) == 4)
        #expect(transferEnded(&state, 2, at: 0.05) == 5)
        #expect(transferEnded(&state, 3, at: 0.06) == nil)
        let (gives, takes) = state.takeSlots(now: 0.08)
        #expect(gives == [3: 103] && takes.isEmpty)
        let (laterGives, laterTakes) = state.takeSlots(now: 0.12)
        #expect(laterGives == [1: 101] && laterTakes.count == 1, "1's wait is over: it and one take go")
        #expect(state.slotsToGive == [2: 102] && state.taking.count == 1)
        #expect(state.freeSlots("a.test") == 0)
    }
}
