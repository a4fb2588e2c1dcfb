import Testing

@testable import DLPipe

@Suite struct SchedulerTests {
    @Test func higherPriorityFirstThenInsertionOrder() {
        var s = Scheduler(concurrency: 10, perHost: 10)
        s.enqueue(DownloadID(1), host: "a", priority: 0)
        s.enqueue(DownloadID(2), host: "a", priority: 5)
        s.enqueue(DownloadID(3), host: "b", priority: 0)
        s.enqueue(DownloadID(4), host: "b", priority: 5)
        let order = (0..<4).compactMap { _ in s.next()?.rawValue }
        #expect(order == [2, 4, 1, 3])
    }

    @Test func globalAndPerHostLimits() {
        var s = Scheduler(concurrency: 3, perHost: 2)
        for i in 1...4 { s.enqueue(DownloadID(i), host: "a", priority: 0) }
        s.enqueue(DownloadID(5), host: "b", priority: 0)
        #expect(s.next() == DownloadID(1))
        #expect(s.next() == DownloadID(2))
        #expect(s.next() == DownloadID(5), "host a is at its limit, b is not")
        #expect(s.next() == nil, "the global limit")
        s.finished(DownloadID(5))
        #expect(s.next() == nil, "a free slot, but host a is still full")
        s.finished(DownloadID(1))
        #expect(s.next() == DownloadID(3))
        #expect(s.active == 2)
    }

    @Test func withdrawnEntriesNeverStartAndMayBeQueuedAgain() {
        var s = Scheduler(concurrency: 1, perHost: 1)
        s.enqueue(DownloadID(1), host: "a", priority: 0)
        s.enqueue(DownloadID(2), host: "a", priority: 0)
        s.withdraw(DownloadID(1))
        s.enqueue(DownloadID(1), host: "a", priority: 0)
        #expect(s.next() == DownloadID(2), "the stale entry of 1 is skipped")
        s.finished(DownloadID(2))
        #expect(s.next() == DownloadID(1))
        s.finished(DownloadID(1))
        #expect(s.next() == nil, "1 runs once, not twice")
        #expect(s.queued == 0)
    }

    @Test func manyQueuedItemsDrainInOrder() {
        var s = Scheduler(concurrency: 1, perHost: 1)
        for i in 1...10_000 { s.enqueue(DownloadID(i), host: "h", priority: 0) }
        var seen = 0
        while let id = s.next() {
            seen += 1
            #expect(id.rawValue == seen)
            s.finished(id)
        }
        #expect(seen == 10_000)
    }
}
