import Dispatch

/// The engine's state, run on a thread of its own. The engine thread only
/// collects records; their statements and commits (two records and a share
/// of a commit per download, several percent of a small file's cost) run on
/// `queue`, beside the transfers instead of between them.
///
/// Write ordering still holds: a part file is created only after
/// `commitAndWait` returns, and a held body is linked only by work chained
/// behind its batch's commit (`commit(then:)`), which learns whether the
/// commit succeeded.
///
/// A batch that failed (a full disk) is not dropped: it stays first in line
/// and goes with the next commit, so the state catches up once the disk has
/// room. The failure is reported to whatever depends on a commit (the next
/// `commitAndWait` throws it, unless that commit succeeds with the batch in
/// it), and at the end of the run (`endRun`).
final class StateWriter: @unchecked Sendable {
    // @unchecked: `pending` and `released` belong to the engine thread; the
    // state, `unwritten` and `unreported` are touched only on `queue`.
    private let state: any DownloadState
    private let queue = DispatchQueue(label: "dlpipe-state")
    private var pending: [DownloadRecord] = []
    /// Files placed earlier that their downloads left for a new name (rare).
    private var released: [ReleasedFile] = []
    /// Whether the state held records when it was opened (see `record`).
    private let hadRecords: Bool
    /// Whether work was handed to the state thread since the engine last
    /// waited for it: until then, a `commitAndWait` with nothing pending has
    /// nothing to wait for.
    private var handedOver = false
    /// Batches whose commit failed, written again before the next one (queue only).
    private var unwritten: ([DownloadRecord], [ReleasedFile]) = ([], [])
    /// The last failure no caller has been told of (queue only).
    private var unreported: StateFailure?

    init(_ state: any DownloadState) {
        self.state = state
        hadRecords = state.hadRecords
    }

    /// Records saved and not yet handed to the state thread.
    var pendingCount: Int { pending.count + released.count }

    /// `DownloadState.durableBySyncOfOutput` of the state written.
    var durableBySyncOfOutput: Bool { state.durableBySyncOfOutput }
    /// `DownloadState.keepsSegments` of the state written.
    var keepsSegments: Bool { state.keepsSegments }

    /// Adds a record to the next commit.
    func save(_ record: DownloadRecord) {
        pending.append(record)
    }

    /// Adds a released file (see `StateStore.release`) to the next commit.
    func release(_ file: ReleasedFile) {
        released.append(file)
    }

    /// Takes what was saved since the last commit.
    private func takeBatch() -> ([DownloadRecord], [ReleasedFile]) {
        defer {
            pending = []
            released = []
        }
        return (pending, released)
    }

    /// Hands the records saved so far to the state thread to be written and
    /// committed; `next` runs there after the commit, with its failure (nil:
    /// the records are on disk).
    func commit(then next: (@Sendable (StateFailure?) -> Void)? = nil) {
        let batch = takeBatch()
        guard !batch.0.isEmpty || !batch.1.isEmpty || next != nil else { return }
        handedOver = true
        queue.async { [self] in
            ThreadName.enter("dlpipe-state")
            let failure = write(batch)
            if failure != nil && next == nil { unreported = failure }
            next?(failure)
        }
    }

    /// Commits the records saved so far and waits until they are on disk;
    /// throws when they are not. Run with `sync`, which runs the block on this
    /// thread when the state thread is idle: no hop to another thread and back
    /// while the engine waits (on a busy machine that hop cost up to a
    /// millisecond per commit). With nothing pending it still waits for the
    /// commits handed over before, and writes a batch that failed again; with
    /// none of those either it returns at once: the part files opened after one
    /// commit of a loop turn cost no more trips to the state queue. (A batch
    /// that failed in a wait was thrown there; the next record written is
    /// always pending, so its retry is never skipped.)
    func commitAndWait() throws(StateFailure) {
        guard !pending.isEmpty || !released.isEmpty || handedOver else { return }
        handedOver = false
        let batch = takeBatch()
        let failure: StateFailure? = queue.sync { [self] in
            let failure = write(batch)
            unreported = nil  // reported now, or written since
            return failure
        }
        if let failure { throw failure }
    }

    /// Writes and commits a batch after any that failed before, on `queue`.
    /// On failure the whole of it waits for the next commit.
    private func write(_ batch: ([DownloadRecord], [ReleasedFile])) -> StateFailure? {
        // Usually nothing failed before: the batch as it is, not a copy.
        let records = unwritten.0.isEmpty ? batch.0 : unwritten.0 + batch.0
        let files = unwritten.1.isEmpty ? batch.1 : unwritten.1 + batch.1
        do {
            try state.write(records, released: files)
            unwritten = ([], [])
            return nil
        } catch {
            unwritten = (records, files)
            return error
        }
    }

    /// Waits for everything handed to the state thread so far (and for the work
    /// chained behind it to be handed on).
    func wait() {
        handedOver = false
        queue.sync {}
    }

    /// The record of a request, with every earlier save applied. The engine asks
    /// once per download, when it starts, before any save of its own. An engine
    /// that makes one download per key (the command line's: whole-run
    /// deduplication) passes `repeatsKeys: false`: then in a file that held no
    /// records when it was opened, no key has one yet, and a first run asks no
    /// query at all. (A set of the keys written, kept instead, cost 20 MB at
    /// 100,000 downloads.) A library engine may download a key again after it
    /// ended, and always asks.
    func record(key: String, repeatsKeys: Bool) throws(StateFailure) -> DownloadRecord? {
        if !hadRecords && !repeatsKeys { return nil }
        // A queue worker read its claims' records when it claimed them: no
        // commit and no wait for the state thread. (The commit below only
        // orders this engine's own earlier saves before a lookup; a read-ahead
        // answer was read at the claim, before this call, either way.)
        if let early = state.readAhead(key: key) { return early }
        commit()
        return try queue.sync { Result { () throws(StateFailure) in try state.record(key: key) } }.get()
    }

    /// Whether `path` is the file of a download the state knows (a target, a
    /// placed or a released file), with every earlier save applied: a file
    /// to adopt must be no download's (`EngineLoop+Adoption`). Asked only
    /// when a file is under a name that a download without a record would take.
    func isDownloadFile(_ path: String) throws(StateFailure) -> Bool {
        commit()
        return try queue.sync { Result { () throws(StateFailure) in try state.isDownloadFile(path) } }.get()
    }

    /// A value of the state's key/value table, read in line with the commits.
    func value(_ key: String) throws(StateFailure) -> String? {
        try queue.sync { Result { () throws(StateFailure) in try state.value(key) } }.get()
    }

    /// Sets a value of the state's key/value table, on the state thread; a
    /// failure loses only this value (it is asked for again next run).
    func setValue(_ key: String, _ json: String) {
        queue.async { [state] in try? state.setValue(key, json) }
    }

    /// `DownloadState.claimValue`, in line with the commits.
    func claimValue(_ key: String, _ value: String) throws(StateFailure) -> Bool {
        try queue.sync { Result { () throws(StateFailure) in try state.claimValue(key, value) } }.get()
    }

    func startRun() throws(StateFailure) -> Int64 {
        try queue.sync { Result { () throws(StateFailure) in try state.startRun() } }.get()
    }

    /// Writes what is left (a batch that failed before included) and ends the
    /// run record. Throws when records are still not on disk (a record
    /// written after its file was in place, say), or the run's own failed.
    func endRun(_ id: Int64, summary: RunSummary) throws(StateFailure) {
        let batch = takeBatch()
        let failure: StateFailure? = queue.sync { [self] in
            // Written now with the rest, or failing again: either way this says
            // all there is to say about earlier failures.
            unreported = nil
            let failure = writeAndEnd(batch, id, summary)
            // A disk the run filled: the space kept for this (SpareSpace) is
            // freed, and the batch, which waits in `unwritten`, goes again.
            if failure != nil && state.releaseSpareSpace() { return writeAndEnd(([], []), id, summary) }
            return failure
        }
        if let failure { throw failure }
    }

    /// Writes a batch (after any that failed before), then ends the run record (queue only).
    private func writeAndEnd(_ batch: ([DownloadRecord], [ReleasedFile]), _ id: Int64, _ summary: RunSummary) -> StateFailure? {
        if let failure = write(batch) { return failure }
        do throws(StateFailure) { try state.endRun(id, summary: summary) } catch { return error }
        return nil
    }
}
