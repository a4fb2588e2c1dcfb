import Testing

@testable import DLPipe
@testable import DLPipeQueue

/// A worker that lost its lease says why (a trial's line named the lease and
/// nothing else) and what it did with its files.
@Suite struct LostLeaseMessageTests {
    @Test func cutOffFromTheDatabaseNamesTheLastError() {
        let line = QueueWorker.lostLease(lease: 2, silent: 3.4, stalled: 0.8, failure: "server closed the connection unexpectedly")
        #expect(line.contains("could not reach the queue's database for 3.4 s (last error: server closed the connection unexpectedly)"), "\(line)")
        #expect(line.contains("longer than its lease (--lease 2.0 s)"))
        #expect(line.contains("took back its downloads") && line.contains("exit 4"))
    }

    /// A worker that did not run for longer than its lease was frozen, even
    /// when a heartbeat had failed before: the freeze is what cost the lease.
    @Test func aLongStallIsAFreeze() {
        let line = QueueWorker.lostLease(lease: 2, silent: 9, stalled: 8.5, failure: "timeout")
        #expect(line.contains("it was stopped or frozen (SIGSTOP, a suspended machine) for 8.5 s"), "\(line)")
        #expect(!line.contains("timeout"))
        let unanswered = QueueWorker.lostLease(lease: 2, silent: 9, stalled: 8.5, failure: nil)
        #expect(unanswered.contains("it was stopped or frozen") && unanswered.contains("9.0 s ago"), "\(unanswered)")
    }

    /// A worker that ran, beat on time and met no error was not frozen: its
    /// heartbeats came too late (a slow connection, a busy database). Its
    /// line used to blame a freeze.
    @Test func heartbeatsOnTimeThatCameLateAreNotAFreeze() {
        let quiet = QueueWorker.lostLease(lease: 2, silent: 2.5, stalled: 0.7, failure: nil)
        #expect(!quiet.contains("frozen"), "\(quiet)")
        #expect(quiet.contains("its heartbeats reached the database too late") && quiet.contains("2.5 s ago"), "\(quiet)")
        #expect(quiet.contains("longer than its lease (--lease 2.0 s)") && quiet.contains("exit 4"), "\(quiet)")
    }
}
