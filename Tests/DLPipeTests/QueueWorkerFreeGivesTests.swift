import Testing

@testable import DLPipe

/// A claim held ahead that comes while a slot of its host is noted to go back
/// (its transfer ended with nobody held ahead) takes the slot over, as at a
/// hand-over; one that comes after the cycle took the give-backs does not,
/// and neither does a slot that was itself handed over and never taken.
@Suite struct QueueWorkerFreeGivesTests {
    private func request(_ number: Int) -> ClaimedRequest {
        ClaimedRequest(number: number, request: DownloadRequest(url: "http://a.test/\(number)"))
    }

    /// A worker's state holding claim 1 on a slot of a.test, its transfer
    /// just ended with nothing held ahead.
    private func endedWithNobodyAhead() -> QueueWorker.State {
        var state = QueueWorker.State()
        state.held[1] = 101
        state.hostOf[1] = "a.test"
        state.slotFree.insert(1)
        #expect(state.handOver(from: 1, token: 101) == nil)
        return state
    }

    /// Claims 2 and 3 come ahead for a.test (as `hold` keeps them).
    private func holdAhead(_ state: inout QueueWorker.State) {
        for number in [2, 3] {
            state.held[Int64(number)] = Int64(100 + number)
            state.hostOf[Int64(number)] = "a.test"
            state.slotFree.insert(Int64(number))
            state.ahead["a.test", default: []].append(request(number))
            state.aheadCount += 1
        }
    }

    @Test func aClaimAheadTakesOverASlotNotYetGivenBack() {
        var state = endedWithNobodyAhead()
        holdAhead(&state)
        let started = state.startOnFreeGives()
        #expect(started.map(\.number) == [2], "one slot, the first claimed")
        #expect(state.taking == [2: 102])
        #expect(state.slotsToGive == [1: 101], "the row that ended still gives its slot back, in the same report")
        #expect(state.transferring == 1 && state.aheadCount == 1 && state.ahead["a.test"]?.map(\.number) == [3])
        #expect(state.startOnFreeGives().isEmpty, "a slot is taken over once")
    }

    @Test func noTakeOverOnceTheCycleTookTheGiveBacks() {
        var state = endedWithNobodyAhead()
        #expect(state.takeGives() == [1: 101])
        holdAhead(&state)
        #expect(state.startOnFreeGives().isEmpty)
        #expect(state.taking.isEmpty && state.aheadCount == 2)
    }

    @Test func aSlotHandedOverAndEndedIsNoFreeGive() {
        var state = QueueWorker.State()
        state.held[1] = 101
        state.hostOf[1] = "a.test"
        holdAhead(&state)
        state.slotFree.insert(1)
        // 1 hands its slot to 2; 2 ends before the report: its row never took one.
        #expect(state.handOver(from: 1, token: 101)?.number == 2)
        state.slotFree.insert(2)
        #expect(state.handOver(from: 2, token: 102)?.number == 3)
        #expect(state.slotsToGive == [1: 101] && state.taking == [3: 103])
        state.slotFree.insert(3)
        #expect(state.handOver(from: 3, token: 103) == nil)
        #expect(state.freeGives.isEmpty, "1's give-back went to 2, then 3: not free for a new claim")
        // And a claim held by a worker that let it go frees nothing either.
        var ended = endedWithNobodyAhead()
        ended.letGo(1)
        #expect(ended.freeGives.isEmpty && ended.slotsToGive.isEmpty)
    }
}
