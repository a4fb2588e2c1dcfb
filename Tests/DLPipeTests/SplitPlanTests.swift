@testable import DLPipe
import Testing

/// A split download's plan: how a file is cut, and what a record keeps of it.
@Suite struct SplitPlanTests {
    @Test func segmentsAreEqualAndAtLeastTheMinimum() throws {
        let mib = SplitPlan.minimumSegment
        #expect(SplitPlan.make(total: 2 * mib - 1, validator: "\"e\"", connections: 8) == nil, "under two segments")
        let plan = try #require(SplitPlan.make(total: 3 * mib + 5, validator: "\"e\"", connections: 8))
        #expect((0..<3).map { plan.segmentAt($0).start } == [0, mib + 1, 2 * mib + 2])
        #expect(plan.segmentAt(2).end == 3 * mib + 5)
        #expect(plan.waiting == [0, 1, 2])
        let four = try #require(SplitPlan.make(total: 100 * mib, validator: "\"e\"", connections: 4))
        #expect(four.waiting.count == 4, "no more than asked for")
    }

    @Test func aRecordRoundTripsAndABrokenOneIsRefused() throws {
        let text = "0:10:1048576,1048576:2097152:2097152,2097152:2097200:3145728"
        let plan = try #require(SplitPlan.recorded(text, total: 3_145_728, validator: "\"e\""))
        #expect(plan.recordText == text)
        #expect(plan.resumePoint == 10)
        #expect(plan.writtenBytes == 10 + 1_048_576 + 48)
        #expect(plan.waiting == [0, 2], "the whole segment waits for nothing")
        #expect(SplitPlan.recorded(text, total: 3_145_729, validator: "\"e\"") == nil, "another length")
        #expect(SplitPlan.recorded(text, total: 3_145_728, validator: nil) == nil, "no validator")
        #expect(SplitPlan.recorded("0:10:5,6:6:10", total: 10, validator: "\"e\"") == nil, "a gap")
        #expect(SplitPlan.recorded("0:9:5,5:5:10", total: 10, validator: "\"e\"") == nil, "next past the end")
    }

    @Test func theFirstTransferTakesOverASegmentNobodyStarted() throws {
        let plan = try #require(SplitPlan.make(total: 4 << 20, validator: "\"e\"", connections: 2))
        #expect(plan.mainReachedEnd() == nil, "no first transfer yet")
        let owner = Owner()
        let limit = plan.mainStarts(Transfer(id: DownloadID(1), easy: CurlEasy(), owner: owner), at: 0)
        #expect(limit == 2 << 20)
        #expect(plan.mainReachedEnd() == 4 << 20, "segment 1 had no transfer: the first one goes on")
        #expect(plan.segmentAt(0).isWhole)
    }

    @Test func theFirstTransferStopsAtASegmentAlreadyWhole() throws {
        // Segment 1's own transfer finished before the first one got there.
        let text = "0:10:1048576,1048576:2097152:2097152,2097152:2097152:3145728"
        let plan = try #require(SplitPlan.recorded(text, total: 3_145_728, validator: "\"e\""))
        let owner = Owner()
        #expect(plan.mainStarts(Transfer(id: DownloadID(1), easy: CurlEasy(), owner: owner), at: 10) == 1_048_576)
        #expect(plan.mainReachedEnd() == nil, "it stops: segment 1 is whole")
        #expect(plan.writtenBytes == 2_097_152, "and nothing of segment 1 is counted again")
    }

    @Test func segmentSlotsCountAgainstTheHostAndNeverStarveTheLine() {
        var s = Scheduler(concurrency: 8, perHost: 2)
        s.enqueue(DownloadID(1), host: "a", priority: 0)
        let first = s.next()
        #expect(first == DownloadID(1))
        let second = s.takeSegmentSlot(host: "a")
        #expect(second, "the host's second slot")
        let third = s.takeSegmentSlot(host: "a")
        #expect(!third, "--per-host 2 holds")
        #expect(s.active == 2)
        s.enqueue(DownloadID(2), host: "b", priority: 0)
        let overLine = s.takeSegmentSlot(host: "b")
        #expect(!overLine, "a download waits in line: it goes first")
        let waiting = s.next()
        #expect(waiting == DownloadID(2))
        s.releaseSegmentSlot(host: "a")
        #expect(s.active == 2)
        let again = s.takeSegmentSlot(host: "a")
        #expect(again)
    }

    final class Owner: TransferOwner {
        func bodyStarts(_ transfer: Transfer) -> BodyDecision { .abort }
    }
}
