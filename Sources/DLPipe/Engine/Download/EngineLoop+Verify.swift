/// `verify` (`--verify`, `dl.config{ verify = true }`): a file an earlier run
/// kept is hashed again before it is asked about, on the hash queue
/// (`dlpipe-hash`), never on the engine thread. The transfer waits for it
/// while the other transfers go on.
///
/// - The same digest as the one the request (`sha256`) or the state knows:
///   the conditional request goes out as usual, and a 304 reports the file
///   as checked by validators and content.
/// - Another digest (or a file that cannot be read): the validators are not
///   sent, so that the server sends the body, which replaces the file with a
///   warning. This is the one case where a file the user changed is replaced
///   without `--overwrite`: the user asked the mirror to match.
/// - No known digest (a file from a run without `verify` or `sha256`): the
///   file is trusted as the validators say, and the digest found is recorded,
///   so that the next run under `verify` checks it.
///
/// Under refresh "never" a file that did not differ is kept without a
/// request; one that differs is fetched and replaced as above.
final class ContentCheck: @unchecked Sendable {
    // @unchecked: `found` is written on the hash queue before the command
    // that reports it is posted, and read on the engine thread after it
    // arrives; the other fields are the engine thread's.
    /// The file's absolute path.
    let path: String
    /// Its relative path, for the warning.
    let relative: String
    /// The lower-case hex digest the file should have; nil when none is known.
    let expected: String?
    /// The digest of the file as it is; nil until hashed, or when unreadable.
    var found: String?
    var started = false
    var settled = false

    init(path: String, relative: String, expected: String?) {
        self.path = path
        self.relative = relative
        self.expected = expected?.lowercased()
    }

    /// The file matched a known digest.
    var matched: Bool { settled && found != nil && found == expected }
    /// The file differs from its known digest, or could not be read.
    var differs: Bool { settled && (found == nil || (expected != nil && found != expected)) }
}

extension EngineLoop {
    /// Under `verify`, a whole file this download finished in an earlier run
    /// is claimed as its own (a new body replaces it) and checked before the
    /// first request. Returns false: the download goes on.
    func checkContent(_ job: Job, _ target: TargetPath, _ record: DownloadRecord) -> Bool {
        job.claim.take(target, owning: true)
        if configuration.refresh == .conditional, record.etag != nil || record.lastModified != nil {
            job.claim.revalidate(etag: record.etag, lastModified: record.lastModified)
        }
        job.checksContent(ContentCheck(
            path: targets.finalPath(target), relative: target.relative, expected: job.request.sha256 ?? record.sha256))
        return false
    }

    /// Whether the job's first request waits for its file's digest. Starts
    /// hashing (once) when so; the transfer starts when `contentChecked`
    /// comes back.
    func waitsForContentCheck(_ job: Job) -> Bool {
        guard let check = job.contentCheck else { return false }
        if check.settled {
            // Refresh "never": a file that did not differ is kept, unasked.
            guard configuration.refresh == .never, !check.differs else { return false }
            keepChecked(job, check)
            return true
        }
        if check.started { return true }
        check.started = true
        let id = job.id
        let inbox = inbox  // the block runs off this thread: never `self`
        disk.resumeHashQueue.async {
            check.found = SHA256Hasher.hexDigest(ofFile: check.path)
            inbox.post(.contentChecked(id, check))
        }
        return true
    }

    /// The file is hashed: a file that differs is fetched unconditionally;
    /// then the transfer that waited starts, unless the job moved on
    /// meanwhile (a pause: its resume asks as decided here).
    func contentChecked(_ id: DownloadID, _ check: ContentCheck) {
        guard let job = jobs[id], job.contentCheck === check, !check.settled else { return }
        check.settled = true
        job.claim.contentHashed(check.found, differs: check.differs)  // f.sha256: the file as it is
        if !check.differs, check.matched, let facts = targets.output.facts(check.relative) {
            // The bytes placed, under a new time (a copy, a `touch`): the
            // file as it is now is the one placed.
            job.claim.recall(placed: facts.placed(at: check.relative))
        }
        guard job.state.phase.kind == .requesting, job.transfer == nil else { return }
        startTransfer(job)
    }

    /// Ends the download with its file kept as it is, without a request.
    private func keepChecked(_ job: Job, _ check: ContentCheck) {
        job.finishes(with: FinishedInfo(
            path: check.path, bytes: targets.output.facts(check.relative)?.size ?? 0, sha256: check.found,
            type: job.knownType ?? "", seconds: 0, unchanged: true, contentVerified: check.matched, askedServer: false))
        feed(job, .transferSucceeded(askHook: interests.contains(.finished)))
    }

    /// A finished download's check for the summary: a file compared with a
    /// known digest (or found unreadable) was verified; one that differed
    /// and came again was replaced.
    func countContentCheck(_ job: Job, _ result: FinishedInfo) {
        guard let check = job.contentCheck, check.settled, check.expected != nil || check.differs else { return }
        ledger.summary.verified += 1
        if check.differs, !result.unchanged { ledger.summary.replaced += 1 }
    }

    /// The warning of a file that did not match its digest and was replaced.
    func contentWarning(_ job: Job, _ final: TargetPath) -> String? {
        guard let check = job.contentCheck, check.differs else { return nil }
        let what = check.found.map { "its SHA-256 is \($0), not \(check.expected ?? "")" } ?? "it could not be read"
        let place = final.relative == check.relative ? "replaced" : "the new version is \(final.relative)"
        return "\(check.relative) did not match (\(what)); fetched again and \(place) (verify)"
    }
}
