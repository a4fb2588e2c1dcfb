internal import CCurl
import Foundation

/// Split downloads: one large file over several connections by byte ranges,
/// into the one part file at offsets (docs/design/split.md). The download's
/// first transfer is the first segment; side transfers fetch the others.
extension EngineLoop {
    /// The part file opened for `transfer`'s body: a download that resumes a
    /// plan puts its first transfer on the plan's segment; a new body that
    /// qualifies gets a plan. False (with `abortError`) when the response does
    /// not fit the plan it resumes.
    func splitOpened(_ job: Job, _ transfer: Transfer) -> Bool {
        if let plan = pool.splits[job.id] {
            guard job.response?.length == plan.total, let limit = plan.mainStarts(transfer, at: transfer.resumeOffset) else {
                startOverSplit(job)
                transfer.abortError = DownloadError(.network, "the file changed during a split download of \(RedactedURL.text(job.currentURL)); it starts over")
                return false
            }
            transfer.segmentLimit = limit
            transfer.hasher = nil  // the whole file is hashed at its end
            return true
        }
        guard transfer.resumeOffset == 0, let plan = newPlan(job, transfer) else { return true }
        pool.splits[job.id] = plan
        transfer.segmentLimit = plan.mainStarts(transfer, at: 0)
        transfer.hasher = nil
        return true
    }

    /// A plan for a body that may split: asked for, a known length, ranges
    /// and a strong validator, a state that keeps segments, at least two segments.
    private func newPlan(_ job: Job, _ transfer: Transfer) -> SplitPlan? {
        let connections = job.request.split ?? configuration.split
        guard connections > 1, let store, store.keepsSegments, job.request.into == .file,
            job.request.effectiveMethod == "GET", configuration.replay == nil, configuration.recorder == nil,
            let total = job.response?.length, let validator = strongValidator(transfer.headers),
            transfer.headers["accept-ranges"]?.lowercased().contains("bytes") == true,
            transfer.headers["content-encoding"].map({ $0.lowercased() == "identity" }) ?? true
        else { return nil }
        return SplitPlan.make(total: total, validator: validator, connections: connections)
    }

    /// A validator `If-Range` may carry for a range of another connection: a
    /// strong ETag, or a Last-Modified at least a second before the
    /// response's Date (RFC 9110 8.8.2.2: only then is a date strong).
    func strongValidator(_ headers: [String: String]) -> String? {
        if let etag = headers["etag"], !etag.isEmpty, !etag.hasPrefix("W/") { return etag }
        guard let text = headers["last-modified"], let modified = HTTPDate.parse(text),
            let date = headers["date"].flatMap(HTTPDate.parse), date.timeIntervalSince(modified) >= 1
        else { return nil }
        return text
    }

    /// The first transfer reached its segment's end (from the write callback).
    func segmentLimitReached(_ transfer: Transfer) -> Int64? {
        pool.splits[transfer.id]?.mainReachedEnd()
    }

    /// A new attempt of a split download: its first transfer resumes the first
    /// segment that is not whole; a plan that no longer fits is dropped (the
    /// download then starts over as one connection).
    func splitAttemptStarts(_ job: Job) {
        guard let plan = pool.splits[job.id] else { return }
        guard let point = plan.resumePoint, point > 0, job.validator == plan.validator, job.target != nil else {
            return startOverSplit(job)
        }
        job.claim.partHolds(point)
    }

    /// Starts the waiting segments of every split download whose first
    /// transfer has its part file open, as far as slots allow (once per loop
    /// turn, outside curl's callbacks).
    func startSegments() {
        for (id, plan) in pool.splits where !plan.awaitsDigest {
            guard let job = jobs[id], job.state.phase.kind == .receiving, let target = job.target else { continue }
            let waiting = plan.waiting
            guard !waiting.isEmpty, plan.mainTransfer != nil || plan.downloadSlotFree else { continue }
            if !plan.recorded {
                // No side transfer writes before a record counts the segments.
                saveState(job, .partial)
                do throws(StateFailure) { try store?.commitAndWait() } catch { continue }
                plan.recorded = true
            }
            let host = URLParts(job.currentURL)?.hostPort ?? job.host
            for i in waiting {
                let slot: SplitPlan.Slot
                if plan.downloadSlotFree {
                    plan.downloadSlotFree = false
                    slot = .download
                } else if scheduler.takeSegmentSlot(host: host) {
                    slot = .extra(host: host)
                } else {
                    break
                }
                startSide(job, plan, i, target, slot)
            }
        }
    }

    /// One segment's transfer: `Range` from its next byte to its end, `If-Range`.
    private func startSide(_ job: Job, _ plan: SplitPlan, _ i: Int, _ target: TargetPath, _ slot: SplitPlan.Slot) {
        let segment = plan.segmentAt(i)
        let easy = pool.idleHandles.popLast() ?? CurlEasy()
        easy.reset()
        let transfer = Transfer(id: job.id, easy: easy, owner: self)
        transfer.installCallbacks()
        configure(easy, transfer, for: job)
        transfer.resumeOffset = segment.next
        transfer.segmentLimit = segment.end
        var lines = hopHeaders(for: job).sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        lines.append("Range: bytes=\(segment.next)-\(segment.end - 1)")
        lines.append("If-Range: \(plan.validator)")
        if configuration.compressed { lines.append("Accept-Encoding: identity") }
        cookies?.mergeCookieHeaders(&lines, into: easy)
        easy.setHeaders(lines)
        do {
            transfer.file = try targets.output.openSegment(targets.partName(target), at: segment.next)
        } catch {
            pool.idleHandles.append(easy)
            if case .extra(let host) = slot { scheduler.releaseSegmentSlot(host: host) } else { plan.downloadSlotFree = true }
            return
        }
        transfer.lastActiveAt = EngineLoop.now()
        pool.transfers[easy.handle] = transfer
        plan.sideStarts(i, transfer, slot: slot)
        multi.add(easy)
    }

    /// A side transfer's head: a 206 for exactly its range of the same file,
    /// else the file changed (never mixed: the download starts over).
    func sideBodyStarts(_ plan: SplitPlan, _ transfer: Transfer) -> BodyDecision {
        let status = transfer.easy.long(CURLINFO_RESPONSE_CODE)
        let range = transfer.headers["content-range"] ?? ""
        guard let i = plan.segment(of: transfer) else { return .abort }
        let segment = plan.segmentAt(i)
        if status == 206, range.hasSuffix("/\(plan.total)"), ContentRange.start(range) == segment.next {
            return .write
        }
        transfer.abortError = status == 206 || status == 200
            ? SplitPlan.changed : DownloadError(.http, "HTTP \(status) to a segment of a split download", status: status)
        return .abort
    }

    /// A side transfer left curl (the pool let go of its handle): its bytes
    /// are counted, its slot goes back, and the download goes on, fails, or
    /// is whole. True when `transfer` was a side transfer.
    func sideEnded(_ transfer: Transfer, code: Int) -> Bool {
        guard let plan = pool.splits[transfer.id], let i = plan.segment(of: transfer) else { return false }
        transfer.file?.finish()
        releaseSlot(plan.sideEnded(transfer), plan)
        guard let job = jobs[transfer.id] else { return true }
        job.progress.received(transfer.received)
        let whole = plan.segmentAt(i).isWhole
        if let error = transfer.abortError ?? (code == Int(CURLE_OK.rawValue) || whole ? nil
            : CurlErrors.map(code, transfer.easy, url: RedactedURL.text(job.currentURL)))
        {
            if error.message == SplitPlan.changed.message { startOverSplit(job) }
            attemptFailed(job, error)
            return true
        }
        if !whole {
            attemptFailed(job, DownloadError(.network, "a segment of \(RedactedURL.text(job.currentURL)) ended early"))
        } else if plan.isWhole, plan.mainTransfer == nil {
            splitWhole(job, plan)
        }
        return true
    }

    private func releaseSlot(_ slot: SplitPlan.Slot?, _ plan: SplitPlan) {
        switch slot {
        case .extra(let host): scheduler.releaseSegmentSlot(host: host)
        case .download: plan.downloadSlotFree = true
        case nil: break
        }
    }

    /// The first transfer's body ended (at its segment's end or the file's).
    func mainSegmentEnded(_ job: Job, _ plan: SplitPlan) {
        let last = plan.mainSegment
        plan.mainEnded()
        if let last, !plan.segmentAt(last).isWhole {
            return attemptFailed(job, DownloadError(.network, "the body ended after \(plan.writtenBytes) of \(plan.total) bytes"))
        }
        if plan.isWhole { splitWhole(job, plan) }
    }

    /// Every segment is whole: hashed first when a digest is wanted (off this
    /// thread: the segments came out of order), then placed as one body.
    private func splitWhole(_ job: Job, _ plan: SplitPlan) {
        reportWholeBody(job, bytes: plan.total)
        guard wantsHash(job), let target = job.target else { return placeSplit(job, plan, digest: nil) }
        plan.awaitsDigest = true
        hashPart(job, target, upTo: plan.total)
    }

    /// The finished part file's digest came back (`resumeHashed`).
    func splitHashed(_ job: Job, _ plan: SplitPlan, _ hash: ResumeHash) {
        job.state.updateAttempt { $0.hashing(nil) }
        plan.awaitsDigest = false
        guard let digest = hash.hasher?.finalHex() else {
            return attemptFailed(job, DownloadError(.io, "cannot read the part file of \(job.target?.relative ?? "the download") to hash it"))
        }
        if let wanted = job.request.sha256?.lowercased(), wanted != digest, let target = job.target {
            startOverSplit(job)
            targets.removePart(target)
            return attemptFailed(job, DownloadError(.checksum, "SHA-256 of \(target.relative) is \(digest), expected \(wanted)"))
        }
        placeSplit(job, plan, digest: digest)
    }

    private func placeSplit(_ job: Job, _ plan: SplitPlan, digest: String?) {
        pool.splits[job.id] = nil
        job.claim.partHolds(plan.total)
        placeChecked(job, size: plan.total, digest: digest, dataSync: nil)
    }

    /// Stops every side transfer of the download; their bytes stay for a resume.
    func abortSegments(_ job: Job) {
        guard let plan = pool.splits[job.id] else { return }
        // The first transfer's bytes count for the next attempt too.
        if plan.mainTransfer != nil { plan.mainEnded() }
        for transfer in plan.sideTransfers {
            if abort(transfer) { job.progress.received(transfer.received) }
            releaseSlot(plan.sideEnded(transfer), plan)
        }
        plan.awaitsDigest = false
    }

    /// The file changed on the server (or its bytes are wrong): the plan and
    /// the part file's bytes go, and the next attempt starts from byte 0.
    private func startOverSplit(_ job: Job) {
        // Its holes go before any record without segments names the part
        // file: resumed by its length, they would be read as the file's bytes.
        dropSplit(job, emptyingPart: true)
        job.claim.startOver()
    }

    /// The download starts over as one connection: its plan goes, and with
    /// `emptyingPart` the part file's bytes.
    func dropSplit(_ job: Job, emptyingPart: Bool) {
        abortSegments(job)
        pool.splits[job.id] = nil
        if emptyingPart, let target = job.target { _ = targets.emptyPart(target) }
    }

    /// About once a second, each split download's part file is synced (on
    /// the fdatasync queue) and then its record takes the segments' progress
    /// from before the sync: a re-run never trusts bytes past the last sync.
    func saveSplitProgress(now: Double) {
        for (id, plan) in pool.splits where plan.recorded && !plan.syncing && now - plan.savedAt >= 1 {
            guard jobs[id]?.state.phase.kind == .receiving, let descriptor = plan.anyFile?.duplicateDescriptor() else { continue }
            plan.savedAt = now
            plan.syncing = true
            let text = plan.recordText
            let inbox = inbox  // the block runs off this thread: never `self`
            disk.fileSyncQueue.async {
                let synced = fdatasync(descriptor) == 0
                close(descriptor)
                // A failed sync reports nothing: the record keeps the last good one.
                inbox.post(.segmentsSynced(id, synced ? text : ""))
            }
        }
    }

    /// A split download's part file was synced: its record says how far each
    /// segment is (unless the download moved on meanwhile).
    func segmentsSynced(_ id: DownloadID, _ text: String) {
        guard let plan = pool.splits[id] else { return }
        guard !text.isEmpty else { return plan.synced(plan.durableText) }
        plan.synced(text)
        guard let job = jobs[id], job.state.phase.kind == .receiving else { return }
        saveState(job, .partial)
    }
}
