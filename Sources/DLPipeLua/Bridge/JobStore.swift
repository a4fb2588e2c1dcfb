import DLPipe

/// `dl.store` as one job sees it: its own keys in the state's `store` table,
/// namespaced by the job's name, so that two jobs writing into one folder never
/// read each other's cursors (issue 12, item 9).
///
/// A namespaced key is stored as `U+001F name U+001F key` in the existing
/// `store(key, value)` table: no schema change, and state files made before
/// namespaces open as they are. Their rows (bare keys, shared by every job)
/// are read as a fallback: a job that has not set a key yet gets the value the
/// shared store held, so that a cron cursor survives the upgrade; its first
/// `set` writes its own row, and the shared row stays for the other jobs.
struct JobStore {
    let namespace: String
    let state: any DownloadState

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

    /// The job's value (JSON text), else the shared one of an older state.
    func value(_ key: String) throws(StateFailure) -> String? {
        if let own = try state.value(Self.rowKey(key, namespace: namespace)) { return own }
        return try state.value(key)
    }

    /// Sets the job's value (JSON text), committed at once.
    func setValue(_ key: String, _ json: String) throws(StateFailure) {
        try state.setValue(Self.rowKey(key, namespace: namespace), json)
    }
}
