import Testing

@testable import DLPipe
@testable import DLPipeQueue

/// A cancel of a download whose retry this worker handed back to the queue
/// and has not reported yet: its row is still this worker's (running under
/// its token), so the queue's cancel does not touch it, and the engine
/// forgot it. The cancel turns the waiting end into a cancelled one; it had
/// been lost, and the retry ran.
@Suite struct QueueWorkerHandBackCancelTests {
    private func handedBack(_ id: Int64, attempts: Int) -> ClaimEnd {
        ClaimEnd(
            id: id, token: 100 + id, outcome: .retry(after: 2), error: "HTTP 503", unchanged: false, bytes: 0, holdHost: 2,
            handedBack: (DownloadRequest(url: "http://a.test/\(id)", name: "f\(id).bin"), attempts))
    }

    @Test func aRetryNotYetReportedEndsCancelled() throws {
        var state = QueueWorker.State()
        state.ends = [handedBack(1, attempts: 2), handedBack(2, attempts: 1)]
        let found = state.cancelHandedBack(2)
        let cancelled = try #require(found)
        #expect(cancelled.url == "http://a.test/2" && cancelled.attempts == 1)
        #expect(cancelled.request.contains("f2.bin"))
        #expect(state.ends.map(\.outcome) == [.retry(after: 2), .cancelled])
        #expect(state.ends[1].error == nil && state.ends[1].token == 102)
        #expect(state.ends[1].holdHost == 2, "the server's Retry-After still holds its host back")
        let again = state.cancelHandedBack(2)
        #expect(again == nil, "once")
    }

    @Test func otherEndsAreLeftAsTheyAre() {
        var state = QueueWorker.State()
        state.ends = [ClaimEnd(id: 3, token: 103, outcome: .finished, error: nil, unchanged: false, bytes: 10)]
        let finished = state.cancelHandedBack(3)
        let unknown = state.cancelHandedBack(4)
        #expect(finished == nil && unknown == nil)
        #expect(state.ends.map(\.outcome) == [.finished])
    }
}
