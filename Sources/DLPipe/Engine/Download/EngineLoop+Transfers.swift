internal import CCurl
internal import CPosix
#if canImport(Glibc)
import Glibc
#endif

/// Starting transfers, reading their responses, and ending them.
extension EngineLoop: TransferOwner {
    /// The body of the final response begins (called from the write callback).
    func bodyStarts(_ transfer: Transfer) -> BodyDecision {
        assertOnEngineThread()
        guard let job = jobs[transfer.id] else { return .abort }
        if let plan = pool.splits[transfer.id], plan.segment(of: transfer) != nil { return sideBodyStarts(plan, transfer) }
        return readResponse(job, transfer)
    }

    /// Acts on the response head: the judgement (`ResponseJudgement`, pure
    /// HTTP semantics), then the file name, the record, and whether a hook must
    /// see it before any byte is written.
    func readResponse(_ job: Job, _ transfer: Transfer) -> BodyDecision {
        let length = transfer.easy.offset(CURLINFO_CONTENT_LENGTH_DOWNLOAD_T)
        // An encoded body's Content-Length counts the wire (curl checks that);
        // the stored, decoded length is known only at its end.
        let encoded = configuration.compressed && CompressedResource.encoded(transfer.headers["content-encoding"])
        let head = ResponseHead(
            status: transfer.easy.long(CURLINFO_RESPONSE_CODE), headers: transfer.headers,
            contentLength: length >= 0 && !encoded ? length : nil)
        if encoded, !job.wantsIdentity, (200..<300).contains(head.status),
            CompressedResource.typed(MediaType.essence(head.headers["content-type"]))
        {
            // curl would decode an archive the server encoded once more: ask
            // again, for the server's own bytes (rare: an extra request).
            job.askForIdentity()
            return .discard(.restart)
        }
        let asked = AskedFor(
            url: job.currentURL, resumeOffset: transfer.resumeOffset, conditional: job.conditional != nil || job.adoption != nil,
            retryAfterCap: configuration.backoffCap)
        let body: AcceptedBody
        switch ResponseJudgement.judge(head, asked) {
        case .unchanged(let type):
            if let adoption = job.adoption {
                guard adoptionHolds(job, adoption, head) else {
                    // Not proven to be the server's file: asked again without
                    // the condition, and the body goes where a taken name sends it.
                    dropAdoption(job)
                    return .discard(.restart)
                }
                adopt(job, adoption, head)
            }
            // A 304 that names a type names the current one; else the state's stays.
            job.claim.unchanged(type: type)
            return .discard(.unchanged)
        case .redirect:
            return .discard(.redirect)
        case .restart:
            return .discard(.restart)
        case .fail(let error, let dropsResume):
            if let seconds = error.retryAfter, error.status == 429 || error.status == 503 {
                holdBackHost(of: job, for: seconds)
            }
            if dropsResume {
                job.claim.startOver()
            }
            transfer.abortError = error
            return .abort
        case .resume(let resumed):
            body = resumed
        case .accept(let whole):
            // A whole body: a split part file's plan and holes go at once (a
            // record without segments must never name a file with holes).
            if pool.splits[job.id] != nil { dropSplit(job, emptyingPart: true) }
            transfer.resumeOffset = 0
            body = whole
        }
        // A body announced larger than the download allows fails before any
        // byte is kept (a body without a length meets the limit as it streams).
        if let limit = job.request.bodyLimit, let total = body.length, total > limit {
            transfer.abortError = DownloadError(.size, "\(RedactedURL.text(job.currentURL)) has \(total) bytes, more than its limit of \(limit) (\(configuration.sizeLimitName))")
            return .abort
        }
        return acceptBody(job, transfer, head, body)
    }

    /// A body the download keeps: its name, its record, then the part file or
    /// the response hook.
    private func acceptBody(_ job: Job, _ transfer: Transfer, _ head: ResponseHead, _ body: AcceptedBody) -> BodyDecision {
        if transfer.resumeOffset == 0, job.partFileMayExist, job.request.into == .file, let target = job.target {
            // A whole body where a part file may lie (a 200 to a resume: the
            // resource changed). Its old bytes go before the record takes the
            // new response's validators: a kill between that record's commit
            // and the part file's truncating open left old bytes under new
            // validators, and the next run resumed them with an If-Range the
            // server matched (a file of two versions).
            if let error = targets.emptyPart(target) {
                transfer.abortError = error
                return .abort
            }
            job.claim.dropPart()
        }
        job.claim.bytesFrom(validator: body.validator)
        let suggested = SuggestedName.make(
            contentDisposition: head.headers["content-disposition"], url: job.request.url, finalURL: job.currentURL,
            contentType: body.type)
        let response = ResponseInfo(
            status: head.status, headers: head.headers, type: body.type, length: body.length,
            filename: suggested, url: job.currentURL,
            resumedFrom: transfer.resumeOffset > 0 ? transfer.resumeOffset : nil)
        job.responded(response)
        job.progress.restarts(from: transfer.resumeOffset, at: EngineLoop.now())
        if job.request.into == .memory { return acceptIntoMemory(job, transfer, response) }
        // A file the download meant to adopt is not the server's (a 200).
        dropAdoption(job)
        if let change = job.localChange, let target = job.target, target.relative == change.path {
            // A new version of a file the user changed since it was placed:
            // beside it, never over it (`placed` says why).
            job.claim.move(to: targets.move(from: target, to: target))
        }
        if job.target == nil {
            do {
                job.claim.move(to: try chooseTarget(job, suggested: suggested))
            } catch {
                transfer.abortError = error
                return .abort
            }
        }
        // The record of the target and its validators is committed before the part
        // file exists, so every part file on disk has a record naming it. The
        // commit is shared: transfers whose heads arrived in this loop turn keep
        // their bytes in memory until one commit after curl's turn
        // (`openCommittedParts`), which writes their records.
        let actions = job.state.handle(.responseArrived(askHook: interests.contains(.response)))
        emit(.response(job.info(root: root), response))
        if actions.contains(.askResponseHook) {
            // The verdict arrives in a later turn. Until then a live transfer
            // keeps its first bytes in memory, and nothing is on disk. A fresh
            // download (one that may end as a held body) saves no record now:
            // most small bodies are whole before the verdict and need one record
            // when held, not two. The record is saved when a part file is due
            // (`continueTransfer`, `completeTransfer`). One whose part file
            // or file may be on disk records the new response at once.
            if transfer.resumeOffset == 0 && !job.ownsTarget && !job.partFileMayExist {
                job.responseAskedUnrecorded()
            } else {
                saveState(job, .partial)
            }
            perform(actions, job)
            return pool.transfers[transfer.easy.handle] === transfer ? .buffer : .pause
        }
        if store != nil {
            if pool.transfers[transfer.easy.handle] !== transfer {
                // An empty body (the transfer is over): committed now, alone
                // (openPartFile commits before it creates the file).
                saveState(job, .partial)
                return openPartFile(job, transfer) ? .write : .abort
            }
            disk.awaitingCommit.append(transfer)
            return .buffer
        }
        return openPartFile(job, transfer) ? .write : .abort
    }

    /// Commits the records of this turn's new responses, then opens their part
    /// files, writes what they buffered meanwhile, and lets their bytes flow.
    /// Runs between `perform` and `handleCompletions`, so a transfer that
    /// completed in curl while buffering has its file whole when it is read.
    /// One that completed with its whole body in memory (`completed`) needs no
    /// record and no part file: it becomes a `HeldFile` (see bodyComplete).
    func openCommittedParts(completed: [CurlMulti.Completion]) {
        guard !disk.awaitingCommit.isEmpty else { return }
        let waiting = disk.awaitingCommit
        disk.awaitingCommit = []
        let whole = disk.holdsWholeBodies
            ? Set(completed.lazy.filter { $0.code == Int(CURLE_OK.rawValue) }.map(\.easy)) : []
        var opening: [(Job, Transfer)] = []
        for transfer in waiting {
            guard let job = jobs[transfer.id], job.transfer === transfer, job.state.phase.kind == .receiving,
                pool.transfers[transfer.easy.handle] === transfer
            else { continue }
            if whole.contains(transfer.easy.handle), transfer.body == .buffering, canHold(job, transfer) {
                transfer.keepWhenComplete()
                continue
            }
            // The record names the part file before the file exists.
            saveState(job, .partial)
            opening.append((job, transfer))
        }
        guard !opening.isEmpty else { return }
        do throws(StateFailure) {
            try store?.commitAndWait()
        } catch {
            for (job, _) in opening { attemptFailed(job, notRecorded(error, partFileOf: job)) }
            return
        }
        for (job, transfer) in opening {
            let paused = transfer.body == .bufferFull  // the buffer filled up and curl was paused
            guard openPartFile(job, transfer), transfer.flushBuffer() else {
                attemptFailed(job, transfer.abortError!)
                continue
            }
            if paused { transfer.easy.unpause() }
        }
    }

    /// Whether a transfer's body, all in memory, may become a `HeldFile`: a
    /// fresh file (no resume, nothing of ours to replace) within the memory cap.
    func canHold(_ job: Job, _ transfer: Transfer) -> Bool {
        disk.holdsWholeBodies && transfer.resumeOffset == 0 && !job.ownsTarget && !job.partFileMayExist
            && disk.heldBytes + transfer.bufferedCount <= EngineLoop.maxHeldBytes
    }

    /// Picks the target for a first response: the caller's name or the server's,
    /// checked, and moved aside (`name.1.ext`) from files dlpipe did not write,
    /// or, under `--overwrite`, over a regular file there.
    func chooseTarget(_ job: Job, suggested: String) throws(DownloadError) -> TargetPath {
        let name = job.request.name ?? suggested
        // The file itself is not checked for a symlink: any existing file under
        // the name is moved aside from below.
        let wanted = try TargetPath.resolve(
            root: root, directory: job.request.directory, name: name, checkingLeaf: false)
        if configuration.overwrite, targets.reserveExistingFile(wanted) != nil {
            // `--overwrite`: the part file is renamed over the file there.
            job.claim.overwriteFileThere()
            return wanted
        }
        job.claim.ask(for: wanted)
        return targets.reserveFree(wanted)
    }

    /// Opens the part file (and the hasher) for the transfer; false on failure.
    func openPartFile(_ job: Job, _ transfer: Transfer) -> Bool {
        guard let target = job.target else { return false }
        if let error = targets.ensureFolder(of: target) {
            transfer.abortError = error
            return false
        }
        do {
            transfer.file = try openNewOrOwnPart(
                job, keeping: transfer.resumeOffset, truncating: pool.splits[job.id] == nil)
        } catch {
            transfer.abortError = error
            return false
        }
        if wantsHash(job) {
            transfer.hasher = hasher(for: job, resumingAt: transfer.resumeOffset)
        }
        return splitOpened(job, transfer)
    }

    /// Reads every transfer that ended; returns how many.
    func handleCompletions(_ done: [CurlMulti.Completion]) -> Int {
        assertOnEngineThread()
        for completion in done {
            if robotsFetchEnded(completion) { continue }
            guard let transfer = pool.transfers.removeValue(forKey: completion.easy) else { continue }
            multi.remove(transfer.easy)
            pool.idleHandles.append(transfer.easy)
            // A refusal of dlpipe's own (abortError) stopped the reading, as a skip does.
            transfer.recording?.finish(transfer.abortError != nil ? .stopped
                : completion.code == Int(CURLE_OK.rawValue) ? .whole : .broken)
            if sideEnded(transfer, code: completion.code) { continue }
            transfer.file?.finish(keepingForSync: keepsDescriptorForSync(
                transfer, endedWhole: completion.code == Int(CURLE_OK.rawValue)))
            guard let job = jobs[transfer.id], job.transfer === transfer else { continue }
            if job.state.phase.kind == .awaitingVerdict, transfer.body.isInMemory, transfer.abortError == nil,
                completion.code == Int(CURLE_OK.rawValue)
            {
                // The whole body came while the response hook decides: it stays in
                // memory and the download ends with the verdict (completeTransfer).
                feed(job, .transferEndedDuringVerdict)
                continue
            }
            job.state.updateAttempt { $0.transferEnded() }
            if transfer.body == .keptWhole || transfer.body == .collecting { transfer.keepWholeBody() }
            job.claim.partHolds(transfer.resumeOffset + transfer.received)
            job.progress.received(transfer.received)
            transferEnded(job, transfer, code: completion.code)
        }
        return done.count
    }

    private func transferEnded(_ job: Job, _ transfer: Transfer, code: Int) {
        if let error = transfer.abortError {
            return attemptFailed(job, CurlErrors.blame(error, transfer.easy, url: RedactedURL.text(job.currentURL)))
        }
        if code == Int(CURLE_OUT_OF_MEMORY.rawValue), transfer.body == .undecided {
            // A header line past libcurl's own limit ends the transfer as "Out
            // of memory" before our header callback sees it: the same head too
            // large as ours, and like it not retried.
            return attemptFailed(job, Transfer.headTooLarge)
        }
        if code != Int(CURLE_OK.rawValue) && !transfer.reachedLimit {
            return attemptFailed(job, CurlErrors.map(code, transfer.easy, url: RedactedURL.text(job.currentURL)))
        }
        if transfer.body == .undecided {
            // An empty body: the write callback never ran, so judge the head now.
            // Never `.buffer`: for a transfer that has ended, readResponse
            // commits and opens the part file at once.
            transfer.decide(readResponse(job, transfer))
        }
        switch transfer.body {
        case .paused:
            // The hook decides after the transfer ended; keep it for completeTransfer.
            job.state.updateAttempt { $0.run(transfer) }
            feed(job, .transferEndedDuringVerdict)
        case .refused:
            attemptFailed(job, transfer.abortError!)
        case .dropping(.restart):
            job.claim.startOver()
            startTransfer(job)
        case .dropping(.redirect):
            followRedirect(job, transfer)
        case .dropping(.unchanged):
            keepUnchanged(job, headers: transfer.headers)
        case .undecided, .streaming, .buffering, .bufferFull, .keptWhole, .collecting:
            bodyComplete(job, transfer)
        }
    }

    /// Starts the next hop of a redirect, in the same attempt.
    private func followRedirect(_ job: Job, _ transfer: Transfer) {
        guard let next = transfer.easy.string(CURLINFO_REDIRECT_URL) else {
            return attemptFailed(job, DownloadError(.http, "a redirect from \(RedactedURL.text(job.currentURL)) without a usable Location"))
        }
        if let refusal = RedirectRule.refusal(
            from: job.currentURL, to: next, allowInsecure: configuration.transport.allowInsecureRedirects)
        {
            return attemptFailed(job, DownloadError(.http, refusal))
        }
        guard job.hops < configuration.maxRedirects else {
            return attemptFailed(job, DownloadError(.http, "more than \(configuration.maxRedirects) redirects from \(RedactedURL.text(job.request.url))"))
        }
        let status = transfer.easy.long(CURLINFO_RESPONSE_CODE)
        job.state.updateAttempt { $0.follow(to: next, method: $0.method.following(status: status)) }
        if job.target == nil { job.claim.dropPart() }
        startTransfer(job)
    }

    /// The server said the file on disk is current (304): keep it. `headers`
    /// are the 304's, the final response's (`f.headers`).
    private func keepUnchanged(_ job: Job, headers: [String: String]) {
        guard let target = job.target else { return }
        let path = targets.finalPath(target)
        job.finishes(with: FinishedInfo(
            path: path, bytes: FileSystem.size(path) ?? 0, sha256: job.knownSHA256, type: job.knownType ?? "",
            seconds: EngineLoop.now() - (job.startedAt ?? EngineLoop.now()), unchanged: true, headers: headers,
            contentVerified: job.contentCheck?.matched == true))
        feed(job, .transferSucceeded(askHook: interests.contains(.finished)))
    }

    /// One attempt failed: the retry policy and the `failed` hook decide what next.
    func attemptFailed(_ job: Job, _ error: DownloadError) {
        abortSegments(job)
        if job.transfer != nil { perform([.abortTransfer(keepPart: true)], job) }
        job.claim.dropPartUnlessResumable()
        saveState(job, .partial, error: error)
        let delay = policy.delay(after: error, attempt: job.state.attempt, unit: Double.random(in: 0..<1))
        feed(job, .transferFailed(
            error, policyDelay: delay, askRetrying: interests.contains(.retrying), askFailed: interests.contains(.failed)))
    }

    /// Takes a transfer out of curl (pause, cancel, skip, shutdown); files stay.
    @discardableResult
    func abort(_ transfer: Transfer) -> Bool {
        transfer.file?.closeFile()
        transfer.recording?.finish(.stopped)
        // A transfer that already completed has left the multi handle and the
        // pool has its easy handle back (maybe already in use by another
        // transfer): only a transfer still registered is taken out of curl.
        guard pool.transfers[transfer.easy.handle] === transfer else { return false }
        pool.transfers.removeValue(forKey: transfer.easy.handle)
        multi.remove(transfer.easy)
        pool.idleHandles.append(transfer.easy)
        return true
    }
}
