import DLPipe

/// A request as the shared queue keeps it.
package struct QueuedRequest: Sendable, Equatable {
    /// `DownloadRequest.deduplicationKey`'s bytes: what makes two adds one row.
    package var key: [UInt8]
    /// The URL without credentials.
    package var url: String
    /// The host whose slots the first request counts against.
    package var host: String
    package var priority: Int = 0
    /// What the engine needs to start the download (target, method, headers
    /// without secrets, meta, depth), as JSON.
    package var request: String = "{}"
    /// Credentials as JSON, kept with the row and nowhere else.
    package var secret: String? = nil
    /// Seconds from now (database clock) before the request may be claimed.
    package var delay: Double = 0

    package init(key: [UInt8], url: String, host: String, priority: Int = 0, request: String = "{}",
                 secret: String? = nil, delay: Double = 0) {
        self.key = key
        self.url = url
        self.host = host
        self.priority = priority
        self.request = request
        self.secret = secret
        self.delay = delay
    }
}

/// A download a worker claimed: it holds it until it reports with `token`.
package struct ClaimedDownload: Sendable, Equatable {
    package let id: Int64
    /// The fence: completions with another token change nothing.
    package let token: Int64
    package let key: [UInt8]
    package let url: String
    package let host: String
    package let priority: Int
    package let request: String
    package let secret: String?
    /// Attempts including this one.
    package let attempts: Int
    /// The job's `per_host` as the claim read it (nil from statements that
    /// do not say): a worker's engine caps its transfers per host at it.
    package var perHost: Int? = nil
}

/// How a claimed download ended, or that it should be tried again.
package enum ClaimOutcome: Sendable, Equatable {
    case finished, skipped, failed, handled, cancelled
    /// Back to ready, claimable by any worker after `seconds` (database clock).
    case retry(after: Double)

    var status: String {
        switch self {
        case .finished: "finished"
        case .skipped: "skipped"
        case .failed: "failed"
        case .handled: "handled"
        case .cancelled: "cancelled"
        case .retry: "ready"
        }
    }

    var delay: Double {
        if case .retry(let seconds) = self { return max(0, seconds) }
        return 0
    }
}

/// One report of a claim's end.
package struct ClaimReport: Sendable, Equatable {
    package let id: Int64
    package let token: Int64
    package let outcome: ClaimOutcome
    package let error: String?
    /// A finished download whose file was kept (a 304): counted as unchanged.
    package let unchanged: Bool
    /// Bytes a finished download wrote (the run's `bytes`).
    package let bytes: Int64
    /// Seconds the server asked (Retry-After) to be left alone: its host
    /// gives no download to any worker until then (0: no such request).
    package let holdHost: Double

    package init(
        id: Int64, token: Int64, outcome: ClaimOutcome, error: String? = nil, unchanged: Bool = false, bytes: Int64 = 0,
        holdHost: Double = 0
    ) {
        self.id = id
        self.token = token
        self.outcome = outcome
        self.error = error
        self.unchanged = unchanged
        self.bytes = bytes
        self.holdHost = holdHost
    }
}

/// The limits of a whole job, kept in its row and read by every claim.
package struct JobLimits: Sendable, Equatable {
    package var perHost: Int
    /// Minimum seconds between two requests to one host (0: none).
    package var hostDelay: Double = 0
    package var maxDownloads: Int? = nil
    /// Whether the worker was given `perHost` and `hostDelay` (on its command
    /// line or in the job's `dl.config`). Only given values change an existing
    /// job's: a worker started without `--per-host` takes the job's limit
    /// instead of putting the default back for every worker.
    package var givesPerHost = true
    package var givesHostDelay = true

    package init(perHost: Int, hostDelay: Double = 0, maxDownloads: Int? = nil, givesPerHost: Bool = true, givesHostDelay: Bool = true) {
        self.perHost = perHost
        self.hostDelay = hostDelay
        self.maxDownloads = maxDownloads
        self.givesPerHost = givesPerHost
        self.givesHostDelay = givesHostDelay
    }
}
