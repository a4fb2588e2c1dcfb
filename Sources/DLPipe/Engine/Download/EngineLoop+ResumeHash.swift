import Dispatch

/// The digest of a part file's first bytes, made off the engine thread for a
/// download that resumes with a checksum to verify.
///
/// The hasher must see the bytes already on disk before the new ones. Hashing
/// them on the engine thread (as the part file opened for the resume) stalled
/// every transfer for as long as it took (about 2 s per GiB here) and could
/// make them fail as stalled. Instead the transfer waits to be started until a
/// queue has hashed them; the other transfers go on meanwhile.
final class ResumeHash: @unchecked Sendable {
    // @unchecked: `hasher` is written on the hashing queue before the command
    // that reports it is posted, and read on the engine thread after it arrives.
    /// The count of bytes hashed: the Range start it was made for.
    let offset: Int64
    /// The hasher fed with them; nil until done, or when the file could not be read.
    var hasher: SHA256Hasher?
    var done = false

    init(offset: Int64) { self.offset = offset }
}

extension EngineLoop {
    /// Whether the job's next transfer resumes a part file whose bytes a
    /// hasher must see first, and they are not hashed yet. Starts hashing them
    /// (once) when so; the transfer starts when `resumeHashed` comes back.
    func waitsForResumeHash(_ job: Job) -> Bool {
        guard job.partBytes > 0, job.validator != nil, let target = job.target, wantsHash(job), pool.splits[job.id] == nil
        else { return false }
        if let pending = job.resumeHash, pending.offset == job.partBytes {
            return !pending.done
        }
        hashPart(job, target, upTo: job.partBytes)
        return true
    }

    /// Hashes the first `offset` bytes of the job's part file on the
    /// resume-hash queue; `resumeHashed` brings the hash back.
    func hashPart(_ job: Job, _ target: TargetPath, upTo offset: Int64) {
        let hash = ResumeHash(offset: offset)
        job.state.updateAttempt { $0.hashing(hash) }
        let path = targets.partPath(target)
        let id = job.id
        let inbox = inbox  // the block runs off this thread: never `self`
        disk.resumeHashQueue.async {
            let hasher = SHA256Hasher()
            if hasher.feed(file: path, upTo: hash.offset) == hash.offset { hash.hasher = hasher }
            hash.done = true
            inbox.post(.resumeHashed(id, hash))
        }
    }

    /// The part file's first bytes are hashed: the transfer that waited starts,
    /// unless the job moved on meanwhile (paused, cancelled, failed, gone). After
    /// a stop the transfer is stopped with the others.
    func resumeHashed(_ id: DownloadID, _ hash: ResumeHash) {
        guard let job = jobs[id], job.resumeHash === hash, job.transfer == nil else { return }
        if let plan = pool.splits[id], plan.awaitsDigest { return splitHashed(job, plan, hash) }
        if hash.hasher == nil {
            // The part file could not be read whole: start over from zero.
            job.state.updateAttempt { $0.hashing(nil) }
            job.claim.dropPart()
        }
        startTransfer(job)
    }

    /// The hasher for a transfer's body: fed with the part file's first
    /// `offset` bytes when it resumes there.
    func hasher(for job: Job, resumingAt offset: Int64) -> SHA256Hasher {
        defer { job.state.updateAttempt { $0.hashing(nil) } }  // the transfer owns it now
        if offset == 0 { return SHA256Hasher() }
        if let hash = job.resumeHash, hash.offset == offset, let hasher = hash.hasher { return hasher }
        // Not expected (startTransfer waits for the hash): correct, if slow.
        let hasher = SHA256Hasher()
        if let target = job.target { hasher.feed(file: targets.partPath(target), upTo: offset) }
        return hasher
    }

    /// Whether the job's body is hashed as it streams (`verify`: a file's,
    /// so that the next run can check it).
    func wantsHash(_ job: Job) -> Bool {
        job.request.sha256 != nil || configuration.alwaysHash || (configuration.verify && job.request.into == .file)
    }
}
