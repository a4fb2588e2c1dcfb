/// What the engine needs from its state, whatever keeps it: the records of
/// downloads (written in batches, one commit each), the lookups a re-run makes,
/// the runs, and the `dl.store` values. `StateStore` keeps them in SQLite; a
/// shared queue would keep them in its database behind the same calls.
///
/// Every call reports failure: a write that did not reach the disk throws,
/// and whatever depended on it (a part file, a held body's link) does not
/// happen. Used by one thread at a time (the engine's state thread, or a
/// command), never concurrently.
package protocol DownloadState: AnyObject, Sendable {
    /// Whether the state held download records when it was opened; when it did
    /// not, an engine that makes one download per key asks no lookups.
    var hadRecords: Bool { get }
    /// The record of a request (`DownloadRequest.deduplicationKey`), if any.
    func record(key: String) throws(StateFailure) -> DownloadRecord?
    /// The answer `record(key:)` would give from records read ahead (a queue
    /// worker's claims, `PostgresDownloadState.prime`), used once; nil when
    /// none was read: then the engine asks `record(key:)`. Safe on any thread.
    func readAhead(key: String) -> DownloadRecord??
    /// Whether a `syncfs` of the output directory's file system makes this
    /// state's commits durable too (a state file under `DIR/.dlpipe`): then a
    /// batch of held bodies syncs after its records' commit, so that one
    /// syncfs carries both. A state elsewhere (a database server) keeps its
    /// commits durable itself, and the batch's writes and syncfs go on while
    /// its records commit; only the links wait for the commit.
    var durableBySyncOfOutput: Bool { get }
    /// Whether a record keeps a split download's segments
    /// (`DownloadRecord.segments`): a download splits only when it does.
    var keepsSegments: Bool { get }
    /// Writes records (each replacing the key's earlier one, in order) and
    /// released files, and commits them together: all of them or none.
    func write(_ records: [DownloadRecord], released: [ReleasedFile]) throws(StateFailure)
    /// Starts a run record; its id.
    func startRun() throws(StateFailure) -> Int64
    /// Ends a run record with its counts.
    func endRun(_ id: Int64, summary: RunSummary) throws(StateFailure)
    /// Frees space a state kept on the disk for the run's last commit (a full
    /// disk must not keep a run from recording its end); whether it freed any.
    func releaseSpareSpace() -> Bool
    /// A `dl.store` value (JSON text), if set.
    func value(_ key: String) throws(StateFailure) -> String?
    /// Sets a `dl.store` value (JSON text), committed at once.
    func setValue(_ key: String, _ json: String) throws(StateFailure)
    /// Bytes the `dl.store` values whose keys start with `prefix` take (keys and values).
    func storedBytes(keyPrefix prefix: String) throws(StateFailure) -> Int
    /// Sets a key/value row to `value` unless it holds it already, at once
    /// and atomically among every process sharing the state; whether it
    /// changed (the caller's claim: robots.txt fetched by one worker a run).
    func claimValue(_ key: String, _ value: String) throws(StateFailure) -> Bool

    // Files that scripts wrote (`dl.write`, `dl.append`) and downloads' files
    // that scripts remove (`dl.remove`); each change committed at once.

    /// The job whose script wrote the file at `path` (relative), if any.
    func writer(of path: String) throws(StateFailure) -> String?
    /// Remembers that `job` wrote the file at `path`.
    func setWriter(of path: String, to job: String) throws(StateFailure)
    /// Forgets the script-written file at `path` (it was removed).
    func forgetWritten(_ path: String) throws(StateFailure)
    /// Every download's file: targets, placed files, released files.
    func downloadFiles() throws(StateFailure) -> Set<String>
    /// Whether `path` is a download's file (as `downloadFiles`).
    func isDownloadFile(_ path: String) throws(StateFailure) -> Bool
    /// Forgets the downloads whose file is `path`, so the next run fetches them again.
    func forgetDownloadFile(_ path: String) throws(StateFailure)
}

/// A state that cannot be opened, read or written; the message says which
/// file and why. Nothing is deleted.
package struct StateFailure: Error, Sendable, CustomStringConvertible {
    package let message: String
    package init(message: String) { self.message = message }
    package var description: String { message }
}

extension DownloadState {
    /// Nothing is read ahead unless a state says so.
    package func readAhead(key: String) -> DownloadRecord?? { nil }
    /// A state file beside the outputs unless a state says otherwise.
    package var durableBySyncOfOutput: Bool { true }
    /// No segments kept unless a state says so.
    package var keepsSegments: Bool { false }
}

extension DownloadState {
    /// A state only one process writes at a time (the run lock) needs no
    /// more than a read and a write.
    package func claimValue(_ key: String, _ value: String) throws(StateFailure) -> Bool {
        if try self.value(key) == value { return false }
        try setValue(key, value)
        return true
    }
}

extension DownloadState {
    /// A state on a database server keeps no spare space on the disk.
    package func releaseSpareSpace() -> Bool { false }
}
