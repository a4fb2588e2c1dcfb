#if canImport(Glibc)
import Glibc
#endif

/// Carrying out what the job state machine decided, and hook verdicts.
extension EngineLoop {
    /// Feeds an input to a job's state machine and performs the resulting actions.
    func feed(_ id: DownloadID, _ input: JobState.Input) {
        guard let job = job(id) else { return }
        feed(job, input)
    }

    func feed(_ job: Job, _ input: JobState.Input) {
        assertOnEngineThread()
        let under = job.attempt
        let actions = job.state.handle(input)
        // A move out of the phases that transfer ends the attempt: the actions
        // that stop its transfer get it from here.
        perform(actions, job, ended: job.attempt == nil ? under : nil)
    }

    /// Performs `actions`; `ended` is the attempt that the move leading to
    /// them ended, if it did.
    func perform(_ actions: [JobState.Action], _ job: Job, ended: Attempt? = nil) {
        for action in actions {
            switch action {
            case .startTransfer:
                startTransfer(job)
            case .continueTransfer:
                continueTransfer(job)
            case .completeTransfer:
                completeTransfer(job)
            case .withdrawHeldBody:
                withdrawHeldBody(job)
            case .abortTransfer(let keepPart):
                abortTransfer(job, ended ?? job.attempt, keepPart: keepPart)
            case .removePartFile:
                if let target = job.target { targets.removePart(target) }
                job.claim.dropPart()
            case .askResponseHook:
                askResponseHook(job)
            case .askFinishedHook:
                askFinishedHook(job)
            case .askRetryingHook(let delay):
                askRetryingHook(job, delay: delay)
            case .askFailedHook:
                askFailedHook(job)
            case .scheduleRetry(let delay):
                if isShared, let error = job.state.retryingAfter {
                    // A shared queue's download: the queue holds the retry.
                    handOver(job)
                    queue.handBack(job.id.rawValue, after: delay, error, request: job.request, attempts: job.state.attempt)
                    break
                }
                schedule.timers.push((EngineLoop.now() + delay, job.id, job.turns.retryTimerSet()))
            case .enqueue:
                if job.slotGivenBack {
                    // A shared queue's download resumed after its transfer
                    // ended: its host slot went back, so another transfer
                    // would run outside the job-wide per_host. The queue
                    // takes it again (ready now), and a claim brings a slot.
                    handOver(job)
                    queue.handBack(job.id.rawValue, after: 0, nil, request: job.request, attempts: job.state.attempt)
                    break
                }
                if schedule.pausedJobs.remove(job.id) != nil { queue.pauseChanged(job.id.rawValue, paused: false) }
                scheduler.enqueue(job.id, host: job.host, priority: job.request.priority)
            case .dequeue:
                scheduler.withdraw(job.id)
            case .releaseSlot:
                scheduler.finished(job.id)
                if isShared, !job.slotGivenBack {
                    // A shared queue's host slot counts transfers: it goes
                    // back now, while the file waits for its batch.
                    job.turns.slotWentBack()
                    queue.transferEnded(job.id.rawValue)
                }
            case .emitRetrying(let error, let delay):
                emit(.retrying(job.info(root: root), error, delay: delay))
            case .emitFinished:
                finish(job, .finished(job.result!))
            case .emitFailed(let error):
                finish(job, .failed(error))
            case .emitHandled(let error):
                finish(job, .handled(error))
            case .emitSkipped(let reason):
                finish(job, .skipped(reason))
            case .emitCancelled:
                finish(job, .cancelled)
            case .emitPaused:
                schedule.pausedJobs.insert(job.id)
                queue.pauseChanged(job.id.rawValue, paused: true)
                emit(.paused(job.info(root: root)))
            }
        }
    }

    /// A held body already linked under its name is on disk: the download
    /// finishes when its batch is settled, and the stop comes too late.
    /// Otherwise it is taken back, and the stop applies.
    private func withdrawHeldBody(_ job: Job) {
        if let held = job.held, held.withdraw() {
            job.heldBodyGone()
            inbox.heldBodiesWithdrawn.add(1, ordering: .relaxed)
            feed(job, .heldBodyWithdrawn)
        } else {
            feed(job, .heldBodyLinked)
        }
    }

    /// Stops the attempt's transfer (the one under way, or the one the move
    /// just ended); its bytes stay for a resume when `keepPart`.
    private func abortTransfer(_ job: Job, _ attempt: Attempt?, keepPart: Bool) {
        // A hash still being made, a request hook's reply or a host
        // turn still to come is for a start that no longer comes.
        job.state.updateAttempt { $0.stop() }
        job.turns.requestVoided()
        job.turns.turnEnded()
        abortSegments(job)
        guard let transfer = attempt?.transfer else { return }
        if abort(transfer) { job.progress.received(transfer.received) }
        job.state.updateAttempt { $0.transferEnded() }
        job.claim.partHolds(keepPart ? transfer.resumeOffset + transfer.received : 0)
        job.claim.dropPartUnlessResumable()
    }

    /// Records a terminal outcome: counts, the terminal event, waiters.
    func finish(_ job: Job, _ outcome: DownloadOutcome) {
        assertOnEngineThread()
        abortSegments(job)
        // Before the event: a program that adds the request again when it sees
        // the event gets a new download, not this ended one.
        closeJob(job)
        let info = job.info(root: root)
        if case .finished(let result) = outcome, !result.unchanged, let target = job.target {
            // A new file is in place: from now on it is the one to claim. One
            // placed before under another name stays there, and the state
            // remembers it for `dlpipe status`.
            if let old = job.placed, old.path != target.relative {
                store?.release(ReleasedFile(path: old.path, url: job.request.url, size: old.size))
            }
            // Its inode and time as it is now (a `finished` handler may have
            // moved it: a rename keeps both), so that a later run can tell a
            // change the user made.
            job.claim.place(
                targets.output.facts(target.relative)?.placed(at: target.relative)
                    ?? PlacedFile(path: target.relative, size: result.bytes))
        }
        switch outcome {
        case .finished: saveState(job, .finished)
        case .failed(let error):
            // A part file the next run cannot resume (no validator for If-Range)
            // would only hold the name: it goes.
            if job.validator == nil, job.partFileMayExist, let target = job.target {
                targets.removePart(target)
            }
            saveState(job, .failed, error: error)
        case .handled(let error): saveState(job, .handled, error: error)
        case .cancelled: saveState(job, .cancelled)
        case .skipped: saveState(job, .skipped)
        case .stopped: break  // only the stop makes it (`shutDown`), never here
        }
        // After the record: one that leaves a split part file names its segments.
        pool.splits[job.id] = nil
        switch outcome {
        case .finished(let result):
            // Unchanged files (304, or refresh "never") are counted apart from
            // the ones downloaded; bytes are what this run received.
            if result.unchanged { ledger.summary.unchanged += 1 } else { ledger.summary.finished += 1 }
            countContentCheck(job, result)
            ledger.summary.bytes += job.receivedThisRun
            emit(.finished(info, result))
            tellPlaced(info, result)
        case .failed(let error):
            ledger.summary.failed += 1
            emit(.failed(info, error))
        case .handled(let error):
            ledger.summary.handled += 1
            emit(.handled(info, error))
        case .skipped(let reason):
            ledger.summary.skipped += 1
            emit(.skipped(info, reason: reason))
        case .cancelled:
            ledger.summary.cancelled += 1
            emit(.cancelled(info))
        case .stopped:
            emit(.stopped(info))
        }
        for reply in ledger.outcomeWaiters.removeValue(forKey: job.id) ?? [] { reply(outcome) }
        // Only the outcome stays: an ended job's response, paths and request are
        // most of the memory of a long run.
        jobs[job.id] = nil
        if configuration.keepsOutcomes { ledger.outcomes[job.id] = outcome }
    }

    /// The response hook answered: rename if asked, then let the bytes flow.
    func applyResponseVerdict(_ id: DownloadID, _ verdict: ResponseVerdict) {
        guard let job = jobs[id], job.state.phase.kind == .awaitingVerdict || job.state.phase.kind == .holdingBody else { return }
        // A memory download has no name to change.
        guard job.request.into == .file, case .proceed(let name, let directory) = verdict, name != nil || directory != nil
        else { return feed(job, .responseVerdict(verdict)) }
        do throws(DownloadError) {
            let old = job.target
            let wanted = try TargetPath.resolve(
                root: root, directory: directory ?? old?.directory, name: name ?? old?.name ?? "download")
            // The same name again (`d.name = r.filename` on a retry): nothing moves.
            guard wanted != old else { return feed(job, .responseVerdict(.proceed())) }
            let renamed = targets.move(from: old, to: wanted)
            job.claim.ask(for: wanted)
            if let old {
                if let transfer = job.transfer, transfer.resumeOffset > 0 {
                    // Bytes resumed under the old name move with the rename; when
                    // they cannot, this attempt cannot resume: start over.
                    if targets.rename(targets.partName(old), to: targets.partName(renamed)) != nil {
                        job.claim.startOver()
                        job.claim.move(to: renamed)
                        return attemptFailed(job, DownloadError(.io, "cannot move the part file of \(old.relative) to \(renamed.relative); starting over"))
                    }
                } else {
                    targets.removePart(old)
                    job.claim.partFile(mayExist: false)  // the new name's part file must be new
                }
            }
            // A new name is never one this job wrote before.
            job.claim.rename(to: renamed)
            // The record names the part file before it exists (write ordering).
            // A fresh download has nothing on disk yet: its record is saved
            // with the new name when a part file is due, or when it is held.
            if !job.responseUnrecorded {
                saveState(job, .partial)
                try commitStateBeforePart(of: job)
            }
        } catch {
            return feed(job, .responseVerdict(.fail(error)))
        }
        feed(job, .responseVerdict(verdict))
    }

    /// Lets a transfer held for the response hook go on. With a state, it
    /// takes the path of a response no hook held (`openCommittedParts`): its
    /// bytes stay in memory until after curl's next turn, so a body that ends
    /// there is held whole (no record, no part file, no commit of its own), and
    /// the others' records are committed together, once per turn, before their
    /// part files are opened.
    func continueTransfer(_ job: Job) {
        guard let transfer = job.transfer else { return }
        if job.request.into == .memory { return continueIntoMemory(job, transfer) }
        if store != nil {
            disk.awaitingCommit.append(transfer)
            return
        }
        if !openPartFile(job, transfer) || !transfer.flushBuffer() {
            return attemptFailed(job, transfer.abortError!)
        }
        transfer.easy.unpause()
    }

    /// The transfer ended while the response hook decided (phase `holdingBody`):
    /// its body, in memory or empty, goes to disk and the download completes.
    func completeTransfer(_ job: Job) {
        guard let transfer = job.transfer else { return }
        if job.request.into == .memory { return completeIntoMemory(job, transfer) }
        if transfer.body.isInMemory, canHold(job, transfer) {
            // The whole body came while the hook decided: no part file for it.
            job.state.updateAttempt { $0.transferEnded() }
            transfer.keepWholeBody()
            job.progress.received(transfer.received)
            return bodyComplete(job, transfer)
        }
        // The record names the part file before it exists.
        if job.responseUnrecorded { saveState(job, .partial) }
        if !openPartFile(job, transfer) || !transfer.flushBuffer() {
            return attemptFailed(job, transfer.abortError!)
        }
        // An empty body, or one that fit the buffer: its bytes are on disk now,
        // so account for them and finish.
        job.state.updateAttempt { $0.transferEnded() }
        job.claim.partHolds(transfer.resumeOffset + transfer.received)
        job.progress.received(transfer.received)
        transfer.file?.finish()
        bodyComplete(job, transfer)
    }

    /// The finished hook answered: move the file if asked, then end the download.
    func applyFinishedVerdict(_ id: DownloadID, _ verdict: FinishedVerdict) {
        guard let job = jobs[id], job.state.phase.kind == .finalizing else { return }
        if case .fail(let error) = verdict { return failFinished(job, error) }
        if case .keep(_, _, let digest?) = verdict { job.finishedHash(digest) }
        guard case .keep(let name, let directory, _) = verdict, name != nil || directory != nil,
            let old = job.target
        else { return feed(job, .finishedVerdict(verdict)) }
        do throws(DownloadError) {
            let wanted = try TargetPath.resolve(
                root: root, directory: directory ?? old.directory, name: name ?? old.name)
            if wanted != old {
                if let error = targets.ensureFolder(of: wanted) { throw error }
                try wanted.checkSymlinks(root: root)
                if targets.output.exists(wanted.relative) && targets.output.sameBytes(wanted.relative, old.relative) {
                    // The name holds these very bytes already (a re-run, or a
                    // duplicate under a content-hash name): no copy is made,
                    // the download's file is the one there.
                    targets.drop(old, for: wanted)
                    job.claim.move(to: wanted)
                    job.finishedFile(movedTo: targets.finalPath(wanted))
                } else {
                    // The download's own file is no collision: when the name
                    // asked for is taken and the next free one is where the file
                    // already is, it stays (a re-run keeps its name, no X.1/X.2 swap).
                    let moved = targets.reserveMove(from: old, to: wanted)
                    if moved != old {
                        if let code = targets.rename(old.relative, to: moved.relative) {
                            targets.release(moved)  // still under its old name, which it holds
                            throw FileErrors.io("cannot move \(old.relative) to", targets.finalPath(moved), errno: code)
                        }
                        targets.release(old)
                        job.claim.move(to: moved)
                        job.finishedFile(movedTo: targets.finalPath(moved))
                    }
                }
            }
        } catch {
            return failFinished(job, error)
        }
        feed(job, .finishedVerdict(.keep()))
    }

    /// A finished hook failed: the download fails, and a failed download leaves
    /// nothing under its final name, so the file goes back to `NAME.part`
    /// (nothing is lost; the next run finds it there). A file found unchanged
    /// (304) was finished by an earlier run and stays.
    private func failFinished(_ job: Job, _ error: DownloadError) {
        if let target = job.target, job.result?.unchanged != true {
            _ = targets.rename(target.relative, to: targets.partName(target), replacing: true)
        }
        feed(job, .finishedVerdict(.fail(error)))
    }

    /// Emits coalesced progress for transfers whose byte count moved, and fails
    /// attempts that made no progress for `timeout` seconds. (curl's own low-speed
    /// check averages over several seconds, so a stall after a fast start would
    /// outlive the timeout.)
    func tickProgress() {
        let now = EngineLoop.now()
        guard now >= pool.nextProgressTick else { return }
        // A download's own timeout may be shorter than the engine's: the check
        // runs often enough for the shortest one in flight.
        var shortest = configuration.timeout
        var stalled: [Transfer] = []
        for transfer in pool.transfers.values {
            shortest = min(shortest, transfer.stallTimeout)
            // Waiting for a hook or for the speed cap is not a stall.
            if transfer.activity != transfer.watchedActivity || transfer.body.pausesCurl || transfer.pacing == .waiting {
                transfer.watchedActivity = transfer.activity
                transfer.lastActiveAt = now
            } else if now - transfer.lastActiveAt >= transfer.stallTimeout {
                stalled.append(transfer)
            }
        }
        pool.nextProgressTick = now + min(configuration.progressInterval, shortest / 4, shortestLimitCheck())
        for transfer in stalled {
            let side = pool.splits[transfer.id]?.segment(of: transfer) != nil
            guard let job = jobs[transfer.id], job.transfer === transfer || side else { continue }
            attemptFailed(job, DownloadError(.timeout, "no progress from \(RedactedURL.text(job.currentURL)) for \(transfer.stallTimeout.secondsText) s"))
        }
        checkTimeAndSpeedLimits(now: now)
        for transfer in pool.transfers.values {
            guard let job = jobs[transfer.id], job.state.phase.kind == .receiving else { continue }
            reportProgress(job, bytes: pool.splits[job.id]?.writtenBytes ?? job.bytes + transfer.collectedCount, now: now)
        }
        if !pool.splits.isEmpty { saveSplitProgress(now: now) }
    }

    /// The body is whole (`bytes` of it): a last progress event unless the
    /// last one said so already, so that progress always reaches the total
    /// (a program that waits for a fraction of 1 ends) before `finished`.
    func reportWholeBody(_ job: Job, bytes: Int64) {
        reportProgress(job, bytes: bytes, now: EngineLoop.now())
    }

    /// A progress event to the streams and the hooks when `bytes` moved.
    private func reportProgress(_ job: Job, bytes: Int64, now: Double) {
        guard job.progress.report(bytes, at: now) else { return }
        let progress = ProgressInfo(bytes: bytes, total: job.response?.length, rate: job.progress.rate)
        let info = job.info(root: root)
        emit(.progress(info, progress))
        hooks?.progress?(info, progress)
    }
}
