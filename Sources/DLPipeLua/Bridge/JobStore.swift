import DLPipe

/// `dl.store` as one job sees it: its own keys in the state's `store` table,
/// namespaced by the job's name, so that two jobs writing into one folder never
/// read each other's cursors.
///
/// A namespaced key is stored as `U+001F name U+001F key` in the existing
/// `store(key, value)` table: no schema change, and state files made before
/// namespaces open as they are. Their rows (bare keys, shared by every job)
/// are read as a fallback: a job that has not set a key yet gets the value the
/// shared store held, so that a cron cursor survives the upgrade; its first
/// `set` writes its own row, and the shared row stays for the other jobs.
final class JobStore {
    let namespace: String
    /// A namespace read for a key the job has not set in its own: in a shared
    /// queue the job's name (`--name`) is the namespace, and the job file's
    /// base name, which workers used before, still answers.
    let earlierNamespace: String?
    let state: any DownloadState
    /// Bytes the job's rows take, learnt at the first `set` and kept up to date after.
    private var total: Int?

    /// The most one value may take, as stored (JSON text), and the most the job's rows may
    /// take together: the store is for cursors and small tables, and each `set` is written
    /// by Swift outside the script memory cap (383 MB were written in 30 s before).
    static let maxValueBytes = 1 << 20
    static let maxTotalBytes = 64 << 20

    /// Why a value is not stored.
    struct Refused: Error { let message: String }

    init(namespace: String, earlierNamespace: String? = nil, state: any DownloadState) {
        self.namespace = namespace
        self.earlierNamespace = earlierNamespace == namespace ? nil : earlierNamespace
        self.state = state
    }

    /// The namespace of the `get` command's hooks (`dlpipe get --hook FILE`).
    static let getNamespace = "get"

    /// The job's name: its file's base name without `.lua` (`jobs/feed.lua` is `feed`).
    static func namespace(ofJob path: String) -> String {
        let base = path.split(separator: "/").last.map(String.init) ?? path
        return base.hasSuffix(".lua") ? String(base.dropLast(4)) : base
    }

    /// The row key of `key` in `namespace`.
    static func rowKey(_ key: String, namespace: String) -> String {
        "\u{1F}" + namespace + "\u{1F}" + key
    }

    /// The job's value (JSON text), else its earlier namespace's, else the
    /// shared one of an older state.
    func value(_ key: String) throws(StateFailure) -> String? {
        if let own = try state.value(Self.rowKey(key, namespace: namespace)) { return own }
        if let earlierNamespace, let earlier = try state.value(Self.rowKey(key, namespace: earlierNamespace)) { return earlier }
        return try state.value(key)
    }

    /// Sets the job's value (JSON text), committed at once, within the limits.
    func setValue(_ key: String, _ json: String) throws(Refused) {
        try Self.check(json)
        let row = Self.rowKey(key, namespace: namespace)
        let before: Int, old: Int
        do throws(StateFailure) {
            if let total { before = total } else { before = try state.storedBytes(keyPrefix: Self.rowKey("", namespace: namespace)) }
            if let value = try state.value(row) { old = row.utf8.count + value.utf8.count } else { old = 0 }
        } catch {
            throw Refused(message: error.message)
        }
        let after = before - old + row.utf8.count + json.utf8.count
        guard after <= Self.maxTotalBytes else {
            total = before
            throw Refused(message: "the job's store would take \(after) bytes, more than the \(Self.maxTotalBytes >> 20) MiB it may hold")
        }
        do throws(StateFailure) { try state.setValue(row, json) } catch { throw Refused(message: error.message) }
        total = after
    }

    /// Refuses a value larger than `maxValueBytes` as stored.
    static func check(_ json: String) throws(Refused) {
        guard json.utf8.count <= maxValueBytes else {
            throw Refused(message: "the value takes \(json.utf8.count) bytes as stored, more than the \(maxValueBytes >> 20) MiB one value may")
        }
    }
}
