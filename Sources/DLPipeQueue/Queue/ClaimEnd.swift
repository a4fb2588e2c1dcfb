import DLPipe

/// A claimed download's end, waiting to be reported.
struct ClaimEnd {
    let id: Int64
    let token: Int64
    var outcome: ClaimOutcome
    var error: String?
    let unchanged: Bool
    let bytes: Int64
    /// A server's Retry-After: its host is held back for every worker.
    var holdHost: Double = 0
    /// A download handed back to the queue (a retry): its request and the
    /// attempts made, for a cancel that comes before this end is reported.
    var handedBack: (request: DownloadRequest, attempts: Int)?
}

extension Array {
    /// The elements, leaving the array empty.
    mutating func take() -> [Element] {
        defer { self = [] }
        return self
    }
}

extension Dictionary {
    /// The entries, leaving the dictionary empty.
    mutating func take() -> Self {
        defer { self = [:] }
        return self
    }
}

