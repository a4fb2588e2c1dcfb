import Foundation

/// One connection to the queue's database that outlives a server restart or
/// a dropped network: a statement that meets a broken connection runs again
/// on a new one, with backoff (0.1 s doubling to 2 s), for at most `patience`
/// seconds; then the last error stands. Every statement given to `run` must
/// therefore be safe to run twice (the queue's statements are: adds find
/// their rows, reports are guarded by tokens, claims whose answer was lost
/// are put back by `SharedQueue.releaseUnknownClaims`).
///
/// Used by one thread at a time (libpq connections are not thread-safe).
final class QueueLink: @unchecked Sendable {
    // @unchecked: one thread at a time, as said above (a Mutex guards the one shared link).
    let address: PostgresAddress
    private let label: String
    private var connection: PostgresConnection?
    /// Set when a statement met a broken connection; the owner reads and clears it.
    var reconnected = false
    /// Seconds after which the server ends this connection's session when it
    /// sits in an open transaction without a statement. A worker's own
    /// transactions last milliseconds; one that sits longer belongs to a
    /// process that froze or died between two statements, and its row locks
    /// would hold every other worker's take-back and claims until then.
    private let idleInTransaction: Double?

    init(_ address: PostgresAddress, label: String, idleInTransaction: Double? = nil) {
        self.address = address
        self.label = label
        self.idleInTransaction = idleInTransaction
    }

    func run<T>(patience: Double, _ work: (PostgresConnection) throws(PostgresError) -> T) throws(PostgresError) -> T {
        let start = QueueClock.now()
        var delay = 0.1
        while true {
            do {
                let open: PostgresConnection
                if let connection, connection.isOpen {
                    open = connection
                } else {
                    connection = nil
                    open = try PostgresConnection(address, applicationName: "dlpipe \(label)")
                    if let idleInTransaction {
                        try open.run("SET idle_in_transaction_session_timeout = \(Int(idleInTransaction * 1000))")
                    }
                    connection = open
                }
                return try work(open)
            } catch where (error.isConnectionLoss || error.isTransient) && QueueClock.now() - start + delay <= patience {
                // A deadlock or serialization failure aborted the statement
                // and changed nothing: the same statement runs again.
                if error.isConnectionLoss {
                    connection = nil
                    reconnected = true
                }
                usleep(UInt32(delay * 1_000_000))
                delay = min(2, delay * 2)
            }
        }
    }

    func close() { connection = nil }
}

/// A monotonic clock in seconds: leases are measured on it, never on the wall clock.
enum QueueClock {
    static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
