/// The files of a worker that shares a job through a queue (issue 11,
/// docs/scale-out.md): its part files are its own, and it places a file only
/// while its lease surely holds.
///
/// Part files live in `folder` (relative to the output directory, one per
/// job), named by the worker and a digest of the final name: short whatever
/// the final name's length, so the 255-byte name limit never bites, and two
/// workers never write into one file. A worker that takes a download over
/// starts its own part file; it never resumes from another worker's.
package struct ClaimedFiles: Sendable {
    /// The job's folder of part files, relative to the output directory.
    package let folder: String
    /// This worker's id in the queue: its part files start with `w<id>-`.
    package let worker: Int64
    /// Whether the worker's lease still holds with a margin, by its own
    /// monotonic clock since the database acknowledged its last heartbeat.
    package let mayPlace: @Sendable () -> Bool
    /// Whether a request may start now: the same rule as `mayPlace` in a
    /// worker (issue #36). A worker frozen past its lease (SIGSTOP, a
    /// suspended machine) and woken holds claims that the other workers took
    /// back, and its transfers that ended in the freeze handed their slots
    /// to its claims held ahead at once, before its heartbeat could tell it
    /// the lease was gone: 3 to 4 requests of downloads another worker
    /// fetched. Asked on the engine thread before each request (a hop of a
    /// redirect too); a request refused waits in its slot and asks again
    /// (`EngineLoop.waitsForLease`). Nil: requests never wait.
    package let mayStart: (@Sendable () -> Bool)?
    /// Takes a download whose attempt failed and that is due another after
    /// `delay` seconds: the queue schedules the retry (its `run_at`), and any
    /// worker may take it then. The local engine forgets the download, as if
    /// it had ended, without a terminal event.
    /// (`error` is nil for a download that goes back without a failure: one
    /// resumed after its transfer ended, whose host slot went back.)
    /// `request` and `attempts` (made so far, by any worker) let a cancel
    /// that comes before the queue took it end it cancelled instead.
    package let handBack: HandBack?

    package typealias HandBack = @Sendable (
        _ number: Int, _ delay: Double, _ error: DownloadError?, _ request: DownloadRequest, _ attempts: Int
    ) -> Void
    /// Download `number`'s transfer ended (its body is checked and waits
    /// for placement, or the transfer stopped): the queue's host slot it
    /// holds may go to another transfer. Called once per download, on the
    /// engine thread; a later transfer of it goes back through `handBack`.
    package let transferEnded: (@Sendable (_ number: Int) -> Void)?
    /// Download `number` was paused (true), or resumed in this engine
    /// (false; one resumed after its transfer ended goes through `handBack`
    /// instead). On the engine thread, before the `paused` event: the queue
    /// must know that a paused download is no work of the run's, or a run
    /// whose last download a handler paused would never end.
    package let pauseChanged: (@Sendable (_ number: Int, _ paused: Bool) -> Void)?
    /// Download `number` got a 429 or 503 with Retry-After: this engine holds
    /// `host` back for `seconds` from now. On the engine thread, at the
    /// answer: the queue learns of the hold only with the download's report,
    /// later (after a `retrying` handler, say), and a claim of that host the
    /// queue hands out before then must not lift this engine's hold.
    package let hostHeld: (@Sendable (_ number: Int, _ host: String, _ seconds: Double) -> Void)?

    package init(
        folder: String, worker: Int64, mayPlace: @escaping @Sendable () -> Bool,
        mayStart: (@Sendable () -> Bool)? = nil,
        handBack: HandBack? = nil,
        transferEnded: (@Sendable (_ number: Int) -> Void)? = nil,
        pauseChanged: (@Sendable (_ number: Int, _ paused: Bool) -> Void)? = nil,
        hostHeld: (@Sendable (_ number: Int, _ host: String, _ seconds: Double) -> Void)? = nil
    ) {
        self.folder = folder
        self.worker = worker
        self.mayPlace = mayPlace
        self.mayStart = mayStart
        self.handBack = handBack
        self.transferEnded = transferEnded
        self.pauseChanged = pauseChanged
        self.hostHeld = hostHeld
    }

    /// The part file of the final name `relative`.
    func partName(of relative: String) -> String {
        let digest = FileDigest.sha256Hex(of: Array(relative.utf8)).prefix(20)
        return "\(folder)/\(Self.prefix(worker))\(digest).part"
    }

    /// What every part file of `worker` starts with.
    package static func prefix(_ worker: Int64) -> String { "w\(worker)-" }

    /// The worker whose part file `name` is (a file name in the folder).
    package static func worker(ofPart name: String) -> Int64? {
        guard name.hasPrefix("w"), name.hasSuffix(".part"), let dash = name.firstIndex(of: "-") else { return nil }
        return Int64(name[name.index(after: name.startIndex)..<dash])
    }
}
