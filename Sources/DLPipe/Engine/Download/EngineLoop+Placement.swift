import Foundation
import Synchronization

/// A checked, whole file waiting for its batch's syncfs before it gets its
/// name: a part file to rename, or a body held in memory (`held`) that the
/// syncfs queue writes and links.
struct Placement {
    let job: Job
    let size: Int64
    let digest: String?
    let held: HeldFile?
    /// A large part file's descriptor, kept for a per-file sync of its batch.
    var dataSync: PartFileSync? = nil
}

/// The end of a body: checks, durability, the final name. With a state to keep
/// honest, a file's bytes reach the disk before its name does: files wait for
/// one syncfs per batch, then get their names (docs/design/state.md).
extension EngineLoop {
    /// The body is all here: check it, put it under its final name, raise `finished`.
    func bodyComplete(_ job: Job, _ transfer: Transfer) {
        if job.request.into == .memory { return memoryBodyComplete(job, transfer) }
        if let plan = pool.splits[job.id], plan.mainTransfer === transfer { return mainSegmentEnded(job, plan) }
        guard let target = job.target else { return }
        let size = transfer.resumeOffset + transfer.received
        if let expected = job.response?.length, size != expected {
            return attemptFailed(job, DownloadError(.network, "the body ended after \(size) of \(expected) bytes"))
        }
        reportWholeBody(job, bytes: size)
        if let body = transfer.wholeBody { return hold(job, target, body) }
        if transfer.file == nil, !openPartFile(job, transfer) {
            return attemptFailed(job, transfer.abortError!)
        }
        let digest = transfer.hasher?.finalHex()
        if let wanted = job.request.sha256?.lowercased(), let digest, wanted != digest {
            targets.removePart(target)
            job.claim.dropPart()
            return attemptFailed(job, DownloadError(.checksum, "SHA-256 of \(target.relative) is \(digest), expected \(wanted)"))
        }
        transfer.file?.finish()
        placeChecked(job, size: size, digest: digest, dataSync: transfer.file?.takeForSync())
    }

    /// A whole, checked part file: named after its batch's sync when there
    /// is a state to keep honest, else at once.
    func placeChecked(_ job: Job, size: Int64, digest: String?, dataSync: PartFileSync?) {
        if store != nil {
            waitForDurability(Placement(job: job, size: size, digest: digest, held: nil, dataSync: dataSync))
            return
        }
        placeFile(job, size: size, digest: digest)
    }

    /// A whole body in memory: checked here, then written, synced and linked
    /// by the syncfs queue with the rest of its batch.
    private func hold(_ job: Job, _ target: TargetPath, _ body: [UInt8]) {
        job.claim.dropPart()  // nothing of it is on disk to resume from
        let digest: String?
        switch checkedDigest(of: body, job, naming: target.relative) {
        case .success(let value): digest = value
        case .failure(let error): return attemptFailed(job, error)
        }
        if let error = targets.ensureFolder(of: target) { return attemptFailed(job, error) }
        let held = HeldFile(
            directory: target.directory, name: target.name, wanted: job.wantedTarget?.name ?? target.name, bytes: body)
        job.hold(held)
        // The record names the file before it appears under its name (committed
        // when the batch starts), with its size as the total: a run killed
        // between the link and the finished record then finds it whole.
        saveState(job, .partial, total: Int64(body.count))
        disk.heldBytes += body.count
        waitForDurability(Placement(job: job, size: Int64(body.count), digest: digest, held: held))
    }

    private func waitForDurability(_ placement: Placement) {
        if disk.awaitingDurability.isEmpty { disk.durabilityBatchStarted = EngineLoop.now() }
        disk.awaitingDurability.append(placement)
        // Its transfer is over: the state machine frees the slot.
        feed(placement.job, .bodyChecked(held: placement.held != nil))
    }

    /// Makes the files waiting in `awaitingDurability` durable, then names each.
    /// A batch starts when it is 20 ms old, large, or nothing else is
    /// transferring or queued, and only one syncs at a time, except the run's
    /// last: when nothing else is transferring or queued, the waiting files start
    /// at once beside the batch in flight instead of waiting for it.
    ///
    /// A batch of large part files only (each kept its descriptor:
    /// `keepsDescriptorForSync`) syncs each with `fdatasync`, on
    /// `fileSyncQueue`: each waits only for its own pages, most of them written
    /// already. Any other batch (held bodies, small part files) takes one
    /// syncfs on `syncQueue`, which waits for every dirty page of the file
    /// system, other programs' too (transfers go on meanwhile), and also writes
    /// and links the held bodies. The part files are renamed on this thread when
    /// `.synced` arrives. `force` (shutdown) waits for the batches in flight and
    /// places every file still waiting, here.
    func placeDurableFiles(force: Bool = false) {
        if force { return placeEveryFileNow() }
        guard !disk.awaitingDurability.isEmpty else { return }
        // "Nothing else to do" means nothing running and nothing waiting for a
        // slot: between two loop turns of a busy run, every transfer may have
        // just ended with the next ones not yet started.
        let idle = pool.transfers.isEmpty && scheduler.queued == 0
        guard !disk.syncInFlight || (idle && disk.syncingBatches.count < 2) else { return }
        let due = idle || disk.awaitingDurability.count >= 128
            || EngineLoop.now() - disk.durabilityBatchStarted >= 0.02
        guard due else { return }
        let batch = disk.awaitingDurability
        disk.awaitingDurability = []
        let number = disk.nextSyncBatch
        disk.nextSyncBatch += 1
        disk.syncingBatches[number] = batch
        let files = batch.compactMap(\.dataSync)
        // The blocks below run off this thread: they capture Sendable values
        // and the inbox, never `self`.
        let (inbox, output) = (inbox, output)
        if files.count == batch.count && batch.count <= EngineLoop.perFileSyncLimit {
            // No held body among them: nothing to write or link, no commit to wait for.
            disk.fileSyncQueue.async {
                if !PartFileSync.syncAll(files) { output.sync() }  // the disk refused one: as before
                inbox.post(.synced(batch: number))
            }
            return
        }
        let held = batch.compactMap(\.held)
        let refusingLinks = configuration.heldBodies == .linksRefused
        let queue = queue
        guard let store, !held.isEmpty else {
            disk.syncQueue.async {
                HeldFile.place(held, in: output, syncAnyway: true, refusingLinks: refusingLinks, mayPlace: { queue.mayPlace() })
                inbox.post(.synced(batch: number))
            }
            return
        }
        // Their records are committed before any of them is linked; when the
        // commit fails none is (the batch's part files still sync).
        if store.durableBySyncOfOutput {
            // The state file is on the outputs' file system: the batch's
            // syncfs comes after the commit and makes the records durable too.
            let syncQueue = disk.syncQueue
            store.commit { failure in
                if let failure { HeldFile.refuse(held, because: failure.message) }
                syncQueue.async {
                    HeldFile.place(held, in: output, syncAnyway: true, refusingLinks: refusingLinks, mayPlace: { queue.mayPlace() })
                    inbox.post(.synced(batch: number))
                }
            }
            return
        }
        // A database keeps its own commits durable: the bodies are written
        // and synced while the records commit, and only the links wait for
        // the commit. A queue worker's commit is a round trip (about 2 ms),
        // which every batch would otherwise wait for before its writes
        // began (docs/design/durability.md).
        let committed = CommitOutcome()
        store.commit { failure in committed.set(failure) }
        disk.syncQueue.async {
            HeldFile.place(held, in: output, syncAnyway: true, refusingLinks: refusingLinks, mayPlace: { queue.mayPlace() }) {
                if let failure = committed.wait() { HeldFile.refuse(held, because: failure.message) }
            }
            inbox.post(.synced(batch: number))
        }
    }

    /// Shutdown: waits for the batches in flight and places every file
    /// still waiting, on this thread.
    private func placeEveryFileNow() {
        guard disk.syncInFlight || !disk.awaitingDurability.isEmpty else { return }
        // The batches in flight have written and linked their files once the
        // state thread has handed them on (their commit first) and the sync
        // queues are done.
        store?.wait()
        disk.syncQueue.waitForQueued()
        disk.fileSyncQueue.waitForQueued()
        let waiting = disk.awaitingDurability
        let held = waiting.compactMap(\.held)
        do throws(StateFailure) {
            try store?.commitAndWait()
        } catch {
            HeldFile.refuse(held, because: error.message)  // no name without a record
        }
        HeldFile.place(
            held, in: output, syncAnyway: true,
            refusingLinks: configuration.heldBodies == .linksRefused, mayPlace: { [queue] in queue.mayPlace() })
        let batch = disk.syncingBatches.keys.sorted().flatMap { disk.syncingBatches[$0] ?? [] } + waiting
        disk.syncingBatches = [:]  // the background syncs' `.synced` find nothing left
        disk.awaitingDurability = []
        settle(batch)
    }

    /// Whether a part file whose transfer just ended keeps its descriptor for
    /// its batch's per-file sync (`PartFileSync`): a body that ended whole and
    /// too large to have been held in memory, with a state to keep honest,
    /// while the waiting batch is still one of a few files. A small file, or one
    /// of many, is cheaper in one syncfs.
    func keepsDescriptorForSync(_ transfer: Transfer, endedWhole: Bool) -> Bool {
        disk.keepsPartDescriptors && endedWhole && transfer.abortError == nil
            && transfer.resumeOffset + transfer.received > Int64(Transfer.maxBufferedBytes)
            && disk.awaitingDurability.count < EngineLoop.perFileSyncLimit
    }

    /// Names each file of a synced batch.
    func settle(_ batch: [Placement]) {
        assertOnEngineThread()
        for placement in batch {
            if let held = placement.held {
                settleHeld(placement, held)
                continue
            }
            // Paused or cancelled meanwhile: the part file's fate is theirs.
            guard placement.job.state.phase.kind == .awaitingDurability else { continue }
            placeFile(placement.job, size: placement.size, digest: placement.digest)
        }
    }

    /// Renames a whole, checked part file to its final name and raises `finished`.
    private func placeFile(_ job: Job, size: Int64, digest: String?) {
        guard let target = job.target else { return }
        if !queue.mayPlace() {
            // The lease may have run out: another worker may hold this
            // download now. Nothing is placed; the whole part file waits for
            // the next acknowledged heartbeat (or for the worker to give up:
            // it exits 4, and whoever takes the download over removes it).
            if disk.fencedPlacements.isEmpty { disk.fenceCheckDue = EngineLoop.now() + 0.5 }
            disk.fencedPlacements.append(Placement(job: job, size: size, digest: digest, held: nil))
            return
        }
        var final = target
        // The file's time before its name: a file under its final name always
        // has the server's time (a process killed right after the rename left
        // one with the time of writing, which a re-run could not adopt).
        if configuration.remoteTime { setRemoteTime(job, targets.partPath(target)) }
        // The file under this name is ours (the state says so): replace it.
        // Otherwise never clobber: someone else may have created the name
        // meanwhile, and then the next free one is taken.
        // Each EEXIST re-reads the folder, so the next name is one the disk
        // did not show: only programs that keep taking the names it picks can
        // make this loop go on, and it is bounded (it runs on the engine thread).
        var tries = 0
        while let code = targets.rename(targets.partName(target), to: final.relative, replacing: job.ownsTarget) {
            tries += 1
            if code == ENOENT, !output.exists(targets.partName(target)) {
                // Never drop a job silently: it must still reach a terminal event.
                return attemptFailed(job, DownloadError(.io, "the part file \(target.relative).part vanished before it could be renamed"))
            }
            guard code == EEXIST, !job.ownsTarget else {
                return attemptFailed(job, FileErrors.io("cannot rename into place", targets.finalPath(final), errno: code))
            }
            if !queue.mayPlace() {
                // A shared queue's worker whose lease is no longer sure met the
                // name taken: most likely the worker that took the download
                // over placed it. Its own copy goes; nothing is numbered.
                targets.removePart(target)
                return attemptFailed(job, DownloadError(
                    .io, "\(final.relative) was placed by another worker while this one's lease was not sure; this copy is dropped"))
            }
            guard tries < 8 else {
                // The download goes on holding the name its part file has.
                if final != target {
                    targets.release(final)
                    _ = targets.reserveExactly(target)
                }
                return attemptFailed(job, DownloadError(
                    .io, "no free name for \(final.relative): other programs keep taking them"))
            }
            // Another program created the name: read the folder again, take the next free one.
            targets.diskDisagreed(about: final)
            final = targets.move(from: final, to: job.wantedTarget ?? target)
        }
        placed(job, as: final, size: size, digest: digest)
    }

    /// Tries again the files the lease fence held back (paused or cancelled
    /// meanwhile: their part files' fate is theirs).
    func placeFencedAgain() {
        let waiting = disk.fencedPlacements
        disk.fencedPlacements = []
        disk.fenceCheckDue = EngineLoop.now() + 0.5
        for placement in waiting where placement.job.state.phase.kind == .awaitingDurability {
            placeFile(placement.job, size: placement.size, digest: placement.digest)
        }
    }

    /// The file is under its final name: the download succeeded.
    private func placed(_ job: Job, as final: TargetPath, size: Int64, digest: String?, timeSet: Bool = true) {
        job.claim.move(to: final)
        if configuration.remoteTime && !timeSet { setRemoteTime(job, targets.finalPath(final)) }
        job.claim.dropPart()
        job.finishes(with: FinishedInfo(
            path: targets.finalPath(final), bytes: size, sha256: digest, type: job.response?.type ?? "",
            seconds: EngineLoop.now() - (job.startedAt ?? EngineLoop.now()), unchanged: false,
            warning: localChangeWarning(job, final) ?? contentWarning(job, final), headers: job.response?.headers ?? [:]))
        feed(job, .transferSucceeded(askHook: interests.contains(.finished)))
    }

    /// Why a new version is not under the name it had: the user changed the
    /// file placed there.
    private func localChangeWarning(_ job: Job, _ final: TargetPath) -> String? {
        guard let change = job.localChange, final.relative != change.path else { return nil }
        return "\(change.path) was changed since dlpipe placed it (\(change.what)); "
            + "the new version is \(final.relative), beside it (--overwrite replaces a changed file)"
    }

    /// How the syncfs queue ended a held body.
    private func settleHeld(_ placement: Placement, _ held: HeldFile) {
        let job = placement.job
        disk.heldBytes -= held.bytes.count
        if job.held === held { job.heldBodyGone() }
        guard let target = job.target else { return }
        switch held.current {
        case .withdrawn:
            return  // paused or cancelled before it was linked
        case .linked(let name):
            var final = target
            final.name = name
            targets.linked(target, as: final)
            placed(job, as: final, size: placement.size, digest: placement.digest, timeSet: false)
        case .failed(let what, let code):
            attemptFailed(job, FileErrors.io(what, targets.finalPath(target), errno: code))
        case .notRecorded(let message):
            attemptFailed(job, DownloadError(.io, "\(message); \(target.relative) was not placed"))
        case .pending:
            attemptFailed(job, DownloadError(.io, "\(target.relative) was never written"))
        case .unsupported:
            // This file system (or directory) cannot link unnamed files: from
            // now on every body takes the part file path, this one too.
            disk.holdsWholeBodies = false
            writeAsPartFile(placement, held, target)
        case .fenced:
            // The lease was not sure at its link: it takes the part file path,
            // whose rename waits for the next acknowledged heartbeat.
            inbox.heldBodiesFenced.add(1, ordering: .relaxed)
            writeAsPartFile(placement, held, target)
        }
    }

    /// A held body written the usual way: a part file (its record was committed
    /// with its batch), renamed after the next batch's syncfs.
    private func writeAsPartFile(_ placement: Placement, _ held: HeldFile, _ target: TargetPath) {
        let job = placement.job
        do throws(DownloadError) {
            let file = try openNewOrOwnPart(job, keeping: 0)
            defer { file.finish() }
            guard held.bytes.withUnsafeBytes({ file.write($0) }) else {
                throw FileErrors.io("cannot write", file.path)
            }
        } catch {
            return attemptFailed(job, error)
        }
        job.claim.partHolds(placement.size)
        waitForDurability(Placement(job: job, size: placement.size, digest: placement.digest, held: nil))
    }
}

extension EngineLoop {
    /// The file's modification time from the response's `Last-Modified` (one
    /// utimensat per placed file, none per chunk); its access time is now. A
    /// failure leaves the time of writing: the download itself succeeded.
    func setRemoteTime(_ job: Job, _ path: String) {
        guard let text = job.response?.headers["last-modified"], let date = HTTPDate.parse(text) else { return }
        let seconds = date.timeIntervalSince1970.rounded(.down)
        // (1 << 30) - 1 is UTIME_NOW, a macro Swift does not import.
        var times = [timespec(tv_sec: 0, tv_nsec: (1 << 30) - 1), timespec(tv_sec: Int(seconds), tv_nsec: 0)]
        _ = utimensat(AT_FDCWD, path, &times, 0)
    }
}

/// A batch's commit as the syncfs queue waits for it: set once on the state
/// thread, waited for once before the batch's links.
private final class CommitOutcome: Sendable {
    private let failure = Mutex<StateFailure?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func set(_ failure: StateFailure?) {
        self.failure.withLock { $0 = failure }
        done.signal()
    }

    func wait() -> StateFailure? {
        done.wait()
        return failure.withLock { $0 }
    }
}
