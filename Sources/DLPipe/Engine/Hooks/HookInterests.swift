/// The events a set of hooks answers: made from which closures of
/// `DownloadHooks` are set, so no event can be wanted and forgotten. The engine
/// asks only these and never pays for the others (no progress closure: no
/// progress call at all).
struct HookInterests: OptionSet, Sendable {
    let rawValue: Int
    static let response = HookInterests(rawValue: 1)
    static let progress = HookInterests(rawValue: 2)
    static let finished = HookInterests(rawValue: 4)
    static let failed = HookInterests(rawValue: 8)
    static let drained = HookInterests(rawValue: 16)
    static let retrying = HookInterests(rawValue: 32)
    /// Before every request (each attempt, each redirect hop).
    static let request = HookInterests(rawValue: 64)
    /// After a download finished, with its file's final path.
    static let placed = HookInterests(rawValue: 128)
}
