/// A queued download's request, until the download starts and becomes a `Job`.
final class WaitingRequest {
    let request: DownloadRequest
    /// The host of its URL, parsed once when it was added.
    let host: String
    /// Attempts made before, elsewhere (a shared queue's retry).
    let priorAttempts: Int
    init(_ request: DownloadRequest, host: String, priorAttempts: Int = 0) {
        self.request = request
        self.host = host
        self.priorAttempts = priorAttempts
    }
}

/// Everything the engine loop knows about one download. Lives on the loop thread.
final class Job {
    let id: DownloadID
    let request: DownloadRequest
    /// The host of the requested URL: where a new attempt is queued, and the
    /// host that credentials may go to. A redirect moves the slot (Scheduler.hop).
    let host: String
    /// The request's state key, built once: every state write names it.
    private(set) lazy var key = request.deduplicationKey
    var state = JobState()
    /// Where the file goes, decided at the first response and kept across attempts.
    var target: TargetPath?
    /// The name the download asked for, when a collision numbered its
    /// target (`name.1.ext`). A numbered name that is taken meanwhile (by
    /// another worker of a shared queue, or another program) goes on to the
    /// next free variant of this one (`name.2.ext`), never to a variant of
    /// the numbered one (`name.1.1.ext`). Nil: the target is the wanted name.
    var wanted: TargetPath?
    /// The name to take the next free variant of when the target is taken.
    var wantedTarget: TargetPath? { wanted ?? target }
    /// Bytes kept in the part file from earlier attempts (the next Range start).
    /// Changed only through `partHolds`, `dropPart`, `dropPartUnlessResumable`
    /// and `startOver`, which hold the rules of what a part file is worth.
    private(set) var partBytes: Int64 = 0
    /// ETag or Last-Modified of the response the part file's bytes came from.
    var validator: String?
    /// The URL the current attempt asks (it moves along redirects).
    var currentURL: String
    /// Redirect hops taken in the current attempt.
    var hops = 0
    /// Monotonic seconds when the current attempt's first hop started
    /// (`maxTime` counts from there).
    var attemptStartedAt = 0.0
    /// The headers a `request` hook gave for the hop about to start; taken
    /// (and cleared) by that hop's transfer, so every hop asks the hook again.
    var hopHeaders: [String: String]?
    /// Counts `request` hook calls, so a reply that a pause, a cancel or a
    /// newer call overtook is recognised and dropped.
    var requestGeneration = 0
    /// The host's turn (HostPacing) is taken for the request about to start.
    var paced = false
    /// The method and body of the current hop: the request's, until a
    /// redirect changes them (`RequestMethod.following`).
    lazy var method = RequestMethod(request)
    var response: ResponseInfo?
    var transfer: Transfer?
    /// The part file's first bytes, being hashed (or hashed) for the next
    /// transfer, which resumes after them (EngineLoop+ResumeHash).
    var resumeHash: ResumeHash?
    /// The whole body, handed to the syncfs queue to be written and named
    /// (phase `placingHeldBody`).
    var held: HeldFile?
    /// A part file of this download may be on disk (an earlier run's, or an
    /// earlier attempt's): its body then goes through it, never held, so that
    /// no stale part file stays beside the final one.
    var partFileMayExist = false
    var result: FinishedInfo?
    /// The final file is one this engine (this run or an earlier one, per the
    /// state) wrote: it may be replaced.
    var ownsTarget = false
    /// The file the state says this download placed (an earlier run's, until
    /// this run places a new one): saved with every record, so that a run
    /// killed while replacing it leaves a state that still claims it.
    var placed: PlacedFile?
    /// Validators of the file on disk, for If-None-Match / If-Modified-Since.
    var conditional: (etag: String?, lastModified: String?)?
    /// A file the state does not know sits under the name this download
    /// would take: its first request asks whether it is current
    /// (`EngineLoop+Adoption`).
    var adoption: Adoption?
    /// The file the state placed for this download was changed by the user
    /// since: a new version goes beside it (unless `overwrite`), and says why.
    var localChange: LocalChange?
    /// `--compressed` only: the server encoded a compressed resource (an
    /// archive's media type), so the download asks again for its own bytes.
    var wantsIdentity = false
    /// Counts retry timers set, so a stale timer is recognised.
    var retryGeneration = 0
    /// A shared queue's download whose transfer ended and whose host slot
    /// went back to the queue (`QueueParticipant.transferEnded`): another
    /// transfer of it needs a new claim.
    var slotGivenBack = false
    /// Body bytes received in this run, across attempts.
    var receivedThisRun: Int64 = 0
    /// The SHA-256 the state recorded for the file on disk (reported on a 304).
    var knownSHA256: String?
    /// The media type the state recorded for the file on disk: `f.type` when
    /// the file is kept (a 304 that names none, refresh "never").
    var knownType: String?
    /// Monotonic seconds when the first attempt started.
    var startedAt: Double?
    /// Progress bookkeeping: the bytes and time of the last report, and the rate.
    var reportedBytes: Int64 = -1
    var reportedAt: Double = 0
    var rate: Double = 0
    /// The response hook was asked without a record of this response saved
    /// (a fresh download whose body may still be held): the record is saved
    /// when a part file is due, if one ever is (`saveState` clears this).
    var responseUnrecorded = false

    init(id: DownloadID, request: DownloadRequest, host: String) {
        self.id = id
        self.request = request
        self.host = host
        self.currentURL = request.url
    }

    /// The part file holds `bytes` (written by a transfer, or found on disk).
    func partHolds(_ bytes: Int64) { partBytes = bytes }

    /// Nothing on disk to resume from: none was written, or it is gone.
    func dropPart() { partBytes = 0 }

    /// Bytes without a validator cannot be resumed (no If-Range to guard
    /// them): they count as none, and the next attempt starts at zero.
    func dropPartUnlessResumable() { if validator == nil { partBytes = 0 } }

    /// The bytes kept cannot be trusted (a range the server placed elsewhere,
    /// a part file that could not follow a rename): start from zero, with no
    /// validator to resume under.
    func startOver() {
        partBytes = 0
        validator = nil
    }

    /// Bytes of the file so far, across attempts.
    var bytes: Int64 {
        guard let transfer else { return partBytes }
        return transfer.resumeOffset + transfer.received
    }

    /// A download as observers see it when it is queued: no target yet.
    static func queuedInfo(id: DownloadID, request: DownloadRequest) -> DownloadInfo {
        DownloadInfo(
            id: id, url: request.url, name: request.name, directory: request.directory ?? "",
            path: nil, parent: request.parent, attempt: 1, meta: request.meta, depth: request.depth)
    }

    /// The job as hooks and observers see it, rooted at `root`.
    func info(root: String) -> DownloadInfo {
        DownloadInfo(
            id: id, url: request.url, name: target?.name ?? request.name,
            directory: target?.directory ?? request.directory ?? "",
            path: target.map { root + "/" + $0.relative }, parent: request.parent,
            attempt: max(1, state.attempt), meta: request.meta, metaJSON: request.metaJSON, depth: request.depth)
    }
}
