import Testing

@testable import DLPipe

/// The scheduler's compact bookkeeping (a bit per queued id, a table only for
/// ids with a stale entry) against the cases that make stale entries.
@Suite struct SchedulerRequeueTests {
    /// Queued again while still queued (no withdraw between): it runs once.
    @Test func queuedTwiceRunsOnce() {
        var s = Scheduler(concurrency: 1, perHost: 1)
        s.enqueue(DownloadID(1), host: "a", priority: 0)
        s.enqueue(DownloadID(1), host: "a", priority: 0)
        #expect(s.queued == 1)
        #expect(s.next() == DownloadID(1))
        s.finished(DownloadID(1))
        #expect(s.next() == nil)
    }

    /// Withdrawn and queued again twice, on two hosts: only the last entry runs.
    @Test func onlyTheLastOfSeveralRequeuesRuns() {
        var s = Scheduler(concurrency: 1, perHost: 1)
        s.enqueue(DownloadID(1), host: "a", priority: 0)
        s.withdraw(DownloadID(1))
        s.enqueue(DownloadID(1), host: "b", priority: 0)
        s.withdraw(DownloadID(1))
        s.enqueue(DownloadID(2), host: "a", priority: 0)
        s.enqueue(DownloadID(1), host: "a", priority: 0)
        #expect(s.next() == DownloadID(2))
        s.finished(DownloadID(2))
        #expect(s.next() == DownloadID(1))
        s.finished(DownloadID(1))
        #expect(s.next() == nil)
        #expect(s.queued == 0)
    }
}
