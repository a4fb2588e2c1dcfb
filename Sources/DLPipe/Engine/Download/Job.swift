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
    /// Its phase and counters; the phases that transfer carry the attempt
    /// under way (`attempt`, `JobState.updateAttempt`).
    var state: JobState
    /// The file it claims in the output folder: its name, what it may
    /// replace, what its part file's bytes are worth (`FileClaim`'s methods
    /// are the only writers).
    var claim = FileClaim()
    /// The schedule's view between turns: host turn, retry timer, queue slot.
    var turns = JobTurns()
    /// The run's bytes, clock and progress reports (`JobProgress`'s methods).
    var progress = JobProgress()
    /// The whole body, handed to the syncfs queue to be written and named
    /// (phase `placingHeldBody`).
    private(set) var held: HeldFile?
    /// The final response of the current (or last) attempt: what the
    /// `response` hook, the record, progress and the `finished` event read.
    private(set) var response: ResponseInfo?
    /// The file in place, as the `finished` event and hook report it.
    private(set) var result: FinishedInfo?
    /// `--compressed` only: the server encoded a compressed resource (an
    /// archive's media type), so the download asks again for its own bytes.
    private(set) var wantsIdentity = false
    /// Under `verify`: the kept file's bytes, hashed before the first request
    /// (`checksContent` sets it).
    private(set) var contentCheck: ContentCheck?
    /// The response hook was asked without a record of this response saved
    /// (a fresh download whose body may still be held): the record is saved
    /// when a part file is due, if one ever is (`saveState` clears this).
    private(set) var responseUnrecorded = false

    /// Under `verify`, the kept file's content is checked before the first request.
    func checksContent(_ check: ContentCheck) { contentCheck = check }

    init(id: DownloadID, request: DownloadRequest, host: String) {
        self.id = id
        self.request = request
        self.host = host
        self.state = JobState(url: request.url, method: RequestMethod(request))
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
    var partFileMayExist: Bool { claim.partFileMayExist }
    var conditional: (etag: String?, lastModified: String?)? { claim.conditional }
    var knownSHA256: String? { claim.knownSHA256 }
    var knownType: String? { claim.knownType }
    // And of the attempt, which only the phases that transfer carry: nil
    // (or the request's own URL, no hops) in any other phase.
    var attempt: Attempt? { state.phase.attempt }
    var transfer: Transfer? { attempt?.transfer }
    /// The URL the next request asks: the current hop's, else the request's.
    var currentURL: String { attempt?.currentURL ?? request.url }
    var hops: Int { attempt?.hops ?? 0 }
    var hopHeaders: [String: String]? { attempt?.hopHeaders }
    var resumeHash: ResumeHash? { attempt?.resumeHash }
    // And of the schedule and the run.
    var paced: Bool { turns.paced }
    var retryGeneration: Int { turns.retryGeneration }
    var requestGeneration: Int { turns.requestGeneration }
    var slotGivenBack: Bool { turns.slotGivenBack }
    var startedAt: Double? { progress.startedAt }
    var receivedThisRun: Int64 { progress.receivedThisRun }

    /// The final response of a transfer arrived.
    func responded(_ info: ResponseInfo) { response = info }

    // MARK: The end of a download

    /// The body is whole and in place (or kept, or in memory): what the
    /// `finished` event and hook report.
    func finishes(with info: FinishedInfo) { result = info }

    /// A `finished` hook gave the SHA-256 it computed: reported when none was.
    func finishedHash(_ digest: String) {
        if result?.sha256 == nil { result?.sha256 = digest }
    }

    /// A `finished` hook moved the file to `path`.
    func finishedFile(movedTo path: String) { result?.path = path }

    /// The whole body goes to the syncfs queue (`placingHeldBody`).
    func hold(_ body: HeldFile) { held = body }

    /// The held body is no longer this download's to take back: withdrawn,
    /// or settled by the syncfs queue.
    func heldBodyGone() { held = nil }

    /// The next attempt asks for the server's own bytes (no decoding).
    func askForIdentity() { wantsIdentity = true }

    /// The response hook is asked before the response's record is saved.
    func responseAskedUnrecorded() { responseUnrecorded = true }

    /// A record of the download as it is now is saved.
    func recorded() { responseUnrecorded = false }

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
