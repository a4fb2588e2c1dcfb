import Dispatch

/// The engine's state store, run on a thread of its own. The engine thread
/// only collects records; their statements and commits (two records and a
/// share of a commit per download, several percent of a small file's cost)
/// run on `queue`, beside the transfers instead of between them.
///
/// Write ordering still holds: a part file is created only after
/// `commitAndWait` returns, and a held body is linked only by work chained
/// behind its batch's commit (`commit(then:)`).
final class StateWriter: @unchecked Sendable {
    // @unchecked: `pending` belongs to the engine thread; the store is touched
    // only on `queue`.
    private let store: StateStore
    private let queue = DispatchQueue(label: "dlpipe-state")
    private var pending: [DownloadRecord] = []
    /// Files placed earlier that their downloads left for a new name (rare).
    private var released: [ReleasedFile] = []
    /// Whether the file held records when it was opened (see `record`).
    private let hadRecords: Bool
    /// Whether work was handed to the state thread since the engine last
    /// waited for it: until then, a `commitAndWait` with nothing pending has
    /// nothing to wait for.
    private var handedOver = false

    init(_ store: StateStore) {
        self.store = store
        hadRecords = store.hadRecords
    }

    /// Records saved and not yet handed to the state thread.
    var pendingCount: Int { pending.count + released.count }

    /// Adds a record to the next commit.
    func save(_ record: DownloadRecord) {
        pending.append(record)
    }

    /// Adds a released file (see `StateStore.release`) to the next commit.
    func release(_ file: ReleasedFile) {
        released.append(file)
    }

    /// Hands the records saved so far to the state thread to be written and
    /// committed; `next` runs there after the commit.
    func commit(then next: (@Sendable () -> Void)? = nil) {
        let batch = pending
        let files = released
        pending = []
        released = []
        guard !batch.isEmpty || !files.isEmpty || next != nil else { return }
        handedOver = true
        queue.async { [store] in
            Self.write(batch, files, to: store)
            next?()
        }
    }

    /// Commits the records saved so far and waits until they are on disk. Run
    /// with `sync`, which runs the block on this thread when the state thread
    /// is idle: no hop to another thread and back while the engine waits (on a
    /// busy machine that hop cost up to a millisecond per commit). With nothing
    /// pending it still waits for the commits handed over before, and with
    /// none of those either it returns at once: the part files opened after one
    /// commit of a loop turn cost no more trips to the state queue.
    func commitAndWait() {
        let batch = pending
        let files = released
        guard !batch.isEmpty || !files.isEmpty || handedOver else { return }
        pending = []
        released = []
        handedOver = false
        queue.sync { [store] in Self.write(batch, files, to: store) }
    }

    /// Writes and commits records, on `queue`.
    private static func write(_ batch: [DownloadRecord], _ files: [ReleasedFile], to store: StateStore) {
        guard !batch.isEmpty || !files.isEmpty else { return }
        for record in batch { store.save(record) }
        for file in files { store.release(file) }
        store.flush()
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
    func record(key: String, repeatsKeys: Bool) -> DownloadRecord? {
        if !hadRecords && !repeatsKeys { return nil }
        commit()
        return queue.sync { store.record(key: key) }
    }

    func startRun() -> Int64 { queue.sync { store.startRun() } }

    func endRun(_ id: Int64, summary: RunSummary) {
        commit()
        queue.sync { store.endRun(id, summary: summary) }
    }
}
