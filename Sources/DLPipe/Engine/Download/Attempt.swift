/// One attempt of a download, from its start to its end, carried by the
/// phases that transfer (`JobState.Phase`): the transfer, the
/// URL and method of the hop under way (they move along redirects), what a
/// `request` hook gave for the next hop and the resume hash made for it.
/// Changed only through the methods below, each named for the event that
/// changes it (docs/design/engine-states.md).
struct Attempt {
    /// The running transfer (nil before the first hop starts, and between
    /// hops while a resume hash, a `request` hook or a host's turn is awaited).
    private(set) var transfer: Transfer?
    /// The URL the current hop asks (it moves along redirects).
    private(set) var currentURL: String
    /// Redirect hops taken in this attempt.
    private(set) var hops = 0
    /// Monotonic seconds when this attempt's first hop started
    /// (`maxTime` counts from there).
    private(set) var startedAt = 0.0
    /// The method and body of the current hop: the request's, until a
    /// redirect changes them (`RequestMethod.following`).
    private(set) var method: RequestMethod
    /// The headers a `request` hook gave for the hop about to start; taken
    /// (and cleared) by that hop's transfer, so every hop asks the hook again.
    private(set) var hopHeaders: [String: String]?
    /// The part file's first bytes, being hashed (or hashed) for the next
    /// transfer, which resumes after them (EngineLoop+ResumeHash).
    private(set) var resumeHash: ResumeHash?

    /// An attempt that starts at `url` with `method` (the request's).
    init(url: String, method: RequestMethod) {
        currentURL = url
        self.method = method
    }

    // MARK: Hops

    /// A hop starts: the first one of an attempt starts its clock.
    mutating func hopStarts(at now: Double) {
        if hops == 0 { startedAt = now }
    }

    /// A redirect: the next hop asks `url` with `next` method.
    mutating func follow(to url: String, method next: RequestMethod) {
        hops += 1
        currentURL = url
        method = next
    }

    // MARK: The request hook

    /// The headers the `request` hook gave for the next hop.
    mutating func hookGave(headers: [String: String]?) { hopHeaders = headers }

    /// The hop's transfer takes the hook's headers: the next hop asks again.
    mutating func takeHopHeaders() -> [String: String]? {
        defer { hopHeaders = nil }
        return hopHeaders
    }

    // MARK: The transfer

    mutating func run(_ running: Transfer) { transfer = running }

    /// The transfer is over (or handed on): the attempt holds none.
    mutating func transferEnded() { transfer = nil }

    /// The attempt stops (a pause, cancel or fail): a hash still being made is
    /// for a start that no longer comes, and headers a `request` hook gave are
    /// for a hop that no longer starts. The transfer stays until it is aborted
    /// (`transferEnded`).
    mutating func stop() {
        resumeHash = nil
        hopHeaders = nil
    }

    // MARK: The resume hash

    mutating func hashing(_ hash: ResumeHash?) { resumeHash = hash }

    /// The next transfer takes the hash (it owns it from now on).
    mutating func takeResumeHash() -> ResumeHash? {
        defer { resumeHash = nil }
        return resumeHash
    }
}
