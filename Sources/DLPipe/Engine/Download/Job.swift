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
    /// The file it claims in the output folder: its name, what it may
    /// replace, what its part file's bytes are worth (`FileClaim`'s methods
    /// are the only writers).
    var claim = FileClaim()
    /// The attempt under way (or the last one): its transfer, hops and
    /// response (`Attempt`'s methods are the only writers).
    var attempt: Attempt
    /// The host's turn (HostPacing) is taken for the request about to start.
    var paced = false
    /// The whole body, handed to the syncfs queue to be written and named
    /// (phase `placingHeldBody`).
    var held: HeldFile?
    /// A part file of this download may be on disk (an earlier run's, or an
    /// earlier attempt's): its body then goes through it, never held, so that
    /// no stale part file stays beside the final one.
    var partFileMayExist = false
    var result: FinishedInfo?
    /// Validators of the file on disk, for If-None-Match / If-Modified-Since.
    var conditional: (etag: String?, lastModified: String?)?
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
    /// Under `verify`: the kept file's bytes, hashed before the first request.
    var contentCheck: ContentCheck?
    /// The media type the state recorded for the file on disk: `f.type` when
    /// the file is kept (a 304 that names none, refresh "never").
    var knownType: String?
    /// Monotonic seconds when the first attempt started.
    var startedAt: Double?
    /// Progress bookkeeping: the bytes and time of the last report (-1: none
    /// since the response), the bytes the response kept, and the rate.
    var reportedBytes: Int64 = -1
    var reportedAt: Double = 0
    var keptAtResponse: Int64 = 0
    var rate: Double = 0
    /// The response hook was asked without a record of this response saved
    /// (a fresh download whose body may still be held): the record is saved
    /// when a part file is due, if one ever is (`saveState` clears this).
    var responseUnrecorded = false

    /// A response starts the rate over from the bytes it kept, at its time:
    /// the first report of an attempt then has a rate (not 0 while bytes
    /// flow), and a retry that starts again from 0 never reads as a negative one.
    func progressRestarts(from kept: Int64, at now: Double) {
        reportedBytes = -1
        reportedAt = now
        keptAtResponse = kept
        rate = 0
    }

    init(id: DownloadID, request: DownloadRequest, host: String) {
        self.id = id
        self.request = request
        self.host = host
        self.attempt = Attempt(request)
    }

    // What hooks, records and transfers read of the claim.
    var target: TargetPath? { claim.target }
    var wantedTarget: TargetPath? { claim.wantedTarget }
    var ownsTarget: Bool { claim.ownsTarget }
    var placed: PlacedFile? { claim.placed }
    var adoption: Adoption? { claim.adoption }
    var localChange: LocalChange? { claim.localChange }
    var partBytes: Int64 { claim.partBytes }
    var validator: String? { claim.validator }
    // And of the attempt.
    var transfer: Transfer? { attempt.transfer }
    var currentURL: String { attempt.currentURL }
    var hops: Int { attempt.hops }
    var attemptStartedAt: Double { attempt.startedAt }
    var method: RequestMethod { attempt.method }
    var hopHeaders: [String: String]? { attempt.hopHeaders }
    var requestGeneration: Int { attempt.requestGeneration }
    var resumeHash: ResumeHash? { attempt.resumeHash }
    var response: ResponseInfo? { attempt.response }

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
