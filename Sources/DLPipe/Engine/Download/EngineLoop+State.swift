import Foundation

/// The engine and its state store: what an earlier run left (finished files to
/// ask about, part files to resume), and records written as downloads move.
/// Write ordering: the record of a download's target and validators is
/// committed before its part file is created; the part file's bytes are
/// renamed into place before the record says finished (docs/design/state.md).
extension EngineLoop {
    /// Applies what the state knows of a newly added download. Returns true when
    /// the download ended at once (a finished file under refresh "never").
    func applyState(_ job: Job) -> Bool {
        // A memory download keeps nothing between runs: no record to look up.
        guard let store, job.request.into == .file else { return false }
        let lookup: DownloadRecord?
        do {
            // A shared queue's worker always asks: another worker may have
            // recorded the key meanwhile (a download taken over from a worker
            // that died after placing its file), and a retry comes back.
            lookup = try store.record(
                key: job.key, repeatsKeys: !configuration.deduplicatesWholeRun || isShared)
        } catch {
            // Without its record the download cannot know which file is its
            // own: it fails rather than guess (and maybe replace one).
            job.state.endBeforeStart(.failed)
            finish(job, .failed(DownloadError(.io, "\(error.message); the download was not started")))
            return true
        }
        guard let record = lookup else {
            // Nothing known: a file under the name may still be the server's.
            prepareAdoption(job)
            return false
        }
        // Whatever happens below, the file placed before stays known until a
        // new one replaces it (or it turns out to be gone).
        job.claim.recall(placed: record.placed)
        guard let relative = record.target else {
            // No file yet (an adoption's request that failed, say): as if unknown.
            prepareAdoption(job)
            return false
        }
        guard let target = try? TargetPath.resolve(root: root, directory: nil, name: relative),
            targets.reserveExactly(target)  // false: another download of this run has it
        else { return false }
        // Held from here; let go below when the name turns out to be another's.
        job.claim.recorded(sha256: record.sha256, type: record.mediaType)
        return claimRecordedName(job, target, record)
    }

    /// The name the record gives is reserved: what the file and part file
    /// under it now are decides what the download may do with them.
    private func claimRecordedName(_ job: Job, _ target: TargetPath, _ record: DownloadRecord) -> Bool {
        let relative = record.target ?? target.relative  // the record's (applyState resolved it)
        // The name itself (a symlink is not followed: one put there is not ours).
        let found = targets.output.facts(relative)
        let finalSize = found?.size
        let partSize = FileSystem.size(targets.partPath(target))
        let ownership = Ownership(
            record: record, target: relative, found: found.map { ($0.size, $0.inode) }, partExists: partSize != nil,
            modified: found?.modified)
        if ownership.placedHere, found == nil { job.claim.recall(placed: nil) }  // removed since: the name is free
        // `--overwrite`: a regular file under the name may be replaced, whoever made it.
        let mayReplace = ownership.ownsFile || (configuration.overwrite && found?.isRegular == true)
        // `verify`: a file this download finished is hashed before it is
        // asked about, changed or not (EngineLoop+Verify).
        if configuration.verify, configuration.refresh != .always, record.status == .finished, partSize == nil,
            found?.isRegular == true
        {
            return checkContent(job, target, record)
        }
        if let change = ownership.changedLocally, partSize == nil {
            return keepLocalChange(job, target, record, LocalChange(path: relative, what: change))
        }
        if ownership.validatorsFit || (partSize == nil && ownership.isPlacedFile) {
            return claimWholeFile(job, target, record, ownership, finalSize: finalSize, partSize: partSize)
        }
        if let partSize {
            // A part file an earlier run left: resume it (If-Range guards it). An
            // empty one too: a new part file is opened O_EXCL, and this one
            // would push the download to a numbered name.
            job.claim.take(target, owning: mayReplace)
            job.claim.partFile(mayExist: true)
            // Only a file of ours is claimed: one `--overwrite` may replace stays the user's until it is.
            if ownership.ownsFile { job.claim.recall(placed: ownership.foundFile) }
            // A part file already at full length (killed between the batch sync
            // and the rename) has nothing left to ask for: it starts over.
            if let text = record.segments, let plan = SplitPlan.recorded(
                text, total: record.total, validator: Validator.forIfRange(etag: record.etag, lastModified: record.lastModified))
            {
                // A split download's part file has holes: each segment resumes
                // where its record says (docs/design/split.md).
                pool.splits[job.id] = plan
                job.claim.resume(partBytes: plan.resumePoint ?? 0, validator: plan.validator)
                return false
            }
            let whole = record.total.map { partSize >= $0 } ?? false
            job.claim.resume(
                partBytes: whole ? 0 : partSize,
                validator: Validator.forIfRange(etag: record.etag, lastModified: record.lastModified))
        } else if finalSize == nil || mayReplace {
            // The same name as before: free, or holding a file this job placed
            // (cut short by a power loss, say), which may be replaced. A file
            // there after a failed or skipped download is someone else's.
            job.claim.take(target, owning: finalSize != nil)
            if ownership.ownsFile { job.claim.recall(placed: ownership.foundFile) }
        } else {
            targets.release(target)
            // The state never placed the file there: it may be the server's.
            prepareAdoption(job)
        }
        return false
    }

    /// A whole file of ours. Its validators describe it unless it is the
    /// file placed before a replacing run that was killed, whose record
    /// already holds the new response's.
    private func claimWholeFile(
        _ job: Job, _ target: TargetPath, _ record: DownloadRecord, _ ownership: Ownership,
        finalSize: Int64?, partSize: Int64?
    ) -> Bool {
        job.claim.take(target, owning: true)
        job.claim.recall(placed: ownership.foundFile)
        // A stale part file beside a whole one (a power loss undid the
        // rename's commit): opened as the job's own, never O_EXCL.
        job.claim.partFile(mayExist: partSize != nil)
        switch configuration.refresh {
        case .never:
            return keepWithoutAsking(job, targets.finalPath(target), size: finalSize, record)
        case .conditional:
            if ownership.validatorsFit, record.etag != nil || record.lastModified != nil {
                job.claim.revalidate(etag: record.etag, lastModified: record.lastModified)
            }
        case .always:
            break
        }
        return false
    }

    /// A file kept without a request (refresh "never"): it ends at once, and
    /// its `finished` event and hook run as for a 304 (unchanged).
    private func keepWithoutAsking(_ job: Job, _ final: String, size: Int64?, _ record: DownloadRecord) -> Bool {
        job.finishes(with: FinishedInfo(
            path: final, bytes: size ?? 0, sha256: record.sha256, type: record.mediaType ?? "",
            seconds: 0, unchanged: true, askedServer: false))
        feed(job, .alreadyFinished(askHook: interests.contains(.finished)))
        return true
    }

    /// The file this download placed was changed by the user since. It is
    /// never replaced silently: the server is asked with the validators of
    /// the version placed (a 304: nothing new, the user's file stays as it
    /// is), and a new version goes beside it (`name.1.ext`, with a warning;
    /// `acceptBody`). Under `--overwrite` it is fetched again and replaces the
    /// changed file. The state keeps remembering the file as it was placed, so
    /// that the change stays known on later runs.
    private func keepLocalChange(_ job: Job, _ target: TargetPath, _ record: DownloadRecord, _ change: LocalChange) -> Bool {
        if configuration.overwrite {
            job.claim.take(target, owning: true)
            return false
        }
        job.claim.take(target, changedLocally: change)
        switch configuration.refresh {
        case .never:
            return keepWithoutAsking(job, targets.finalPath(target), size: targets.output.facts(target.relative)?.size, record)
        case .conditional:
            // A finished record's validators are the placed version's; a
            // replacing run's (killed before its part file) are a version
            // never placed: then the body is fetched.
            if record.status == .finished, record.etag != nil || record.lastModified != nil {
                job.claim.revalidate(etag: record.etag, lastModified: record.lastModified)
            }
        case .always:
            break
        }
        return false
    }

    /// Records a download's current facts (batched; `flushState` commits).
    /// `total` stands in for an unknown Content-Length (a held body's size).
    func saveState(_ job: Job, _ status: DownloadRecord.Status, error: DownloadError? = nil, total: Int64? = nil) {
        assertOnEngineThread()
        // A memory download has no file and keeps no record (it is fetched
        // again on every run).
        guard let store, job.request.into == .file else { return }
        job.recorded()
        let headers = job.response?.headers ?? [:]
        store.save(DownloadRecord(
            // A name held for an adoption is not the download's until the 304 proves it.
            key: job.key, url: job.request.url, target: job.adoption == nil ? job.target?.relative : nil, status: status,
            bytes: status == .finished ? (job.result?.bytes ?? 0) : pool.splits[job.id]?.writtenBytes ?? job.bytes,
            total: job.response?.length ?? job.result?.bytes ?? total,
            etag: headers["etag"] ?? job.conditional?.etag, lastModified: headers["last-modified"] ?? job.conditional?.lastModified,
            sha256: job.result?.sha256, mediaType: job.response?.type ?? job.knownType, attempts: job.state.attempt,
            lastError: error.map { "\($0.kind.rawValue): \($0.message)" }, updatedAt: 0, placed: job.placed,
            // A part file with holes is resumable only by its segments, whatever the status.
            segments: status == .finished ? nil : pool.splits[job.id]?.durableText))
    }

    /// Commits the batch of state writes, on the state thread, when it is large
    /// or 50 ms old. Each commit appends whole copies of the pages it changed
    /// to the WAL, and the same few pages change in every commit, so one commit
    /// per loop turn wrote most pages many times over. Nothing needs these
    /// commits sooner: a part file's record is committed before the file is
    /// created (`commitState`), a held body's before it is linked, and a run
    /// killed before a finished record is committed finds the file whole.
    func flushState(force: Bool = false) {
        guard let store, store.pendingCount > 0 else { return }
        let now = EngineLoop.now()
        guard force || store.pendingCount >= 512 || now - disk.lastStateCommit >= EngineLoop.stateCommitInterval else { return }
        disk.lastStateCommit = now
        store.commit()
    }

    /// Commits the batch of state writes and waits: before a part file is
    /// created, its record must be on disk. When it is not, the part file is
    /// not made, and the download fails with this error, of kind `io`.
    func commitStateBeforePart(of job: Job) throws(DownloadError) {
        do {
            try store?.commitAndWait()
        } catch {
            throw notRecorded(error, partFileOf: job)
        }
    }

    /// A part file not created because its record could not be committed.
    func notRecorded(_ failure: StateFailure, partFileOf job: Job) -> DownloadError {
        DownloadError(.io, "\(failure.message); the part file of \(job.target?.relative ?? "the download") was not created")
    }

    /// Ends the run's record; a state that could not record everything says
    /// so in the summary (`RunSummary.stateError`).
    func endRun() {
        guard let store else { return }
        do {
            try store.endRun(ledger.runID, summary: ledger.summary)
            ledger.summary.stateError = nil  // what failed before is written now
        } catch {
            ledger.summary.stateError = error.message
        }
    }
}
