import DLPipe
import Foundation

/// A blocking PostgreSQL connection that outlives the connections it uses:
/// when a call fails because the connection broke (a server restart, a
/// dropped network, a backend an administrator terminated) it connects
/// again and runs the call again, waiting 0.1 s, then twice as long each
/// time up to 2 s between attempts, for at most `patience` seconds from
/// the first failure. Then it gives up with a `connection` error that says
/// for how long it tried.
///
/// A call may therefore run twice, even when its first run took effect
/// (the server committed, then the answer was lost): every call passed to
/// `run` must be idempotent (upserts, deletes by key, reads; the queue's
/// statements are: adds find their rows, reports are guarded by tokens,
/// claims whose answer was lost are put back by
/// `SharedQueue.releaseUnknownClaims`). A deadlock or a serialization
/// failure aborted the statement and changed nothing: it runs again too.
///
/// Not thread-safe, like the connection it holds: its owner serialises calls
/// (one thread each for a queue worker's links, or a Mutex).
package final class ReconnectingConnection: @unchecked Sendable {
    // @unchecked: one thread at a time, as said above.
    package let address: PostgresAddress
    /// Seconds of failed attempts before a call gives up (plus, at worst,
    /// one connection attempt's own timeout, 10 s unless the address sets
    /// `connect_timeout`), unless the call gives its own.
    package let patience: Double
    private let applicationName: String
    /// A statement run on every new connection before its first call (the
    /// session's settings, which a reconnection must not lose).
    private let sessionSetup: String?
    private var connection: PostgresConnection?
    /// Set when a call met a broken connection; the owner reads and clears
    /// it (what a session held, such as LISTEN, must be done again).
    package var reconnected = false

    /// How the message of a call that gave up begins.
    package static let unreachable = "the queue's database"

    /// The first wait before connecting again, and the longest.
    static let firstBackoff = 0.1
    static let longestBackoff = 2.0

    /// Connects at once: an address that does not answer now is the
    /// caller's error to report (the queue's database is down at start),
    /// not one to wait out.
    package init(
        _ address: PostgresAddress, patience: Double, applicationName: String, sessionSetup: String? = nil
    ) throws(PostgresError) {
        self.address = address
        self.patience = max(0, patience)
        self.applicationName = applicationName
        self.sessionSetup = sessionSetup
        connection = try Self.open(address, applicationName, sessionSetup)
    }

    /// Connects at its first call: a queue worker's links, made before the
    /// worker knows whether the database answers (its first call says so).
    package init(lazy address: PostgresAddress, applicationName: String, sessionSetup: String? = nil) {
        self.address = address
        patience = 0
        self.applicationName = applicationName
        self.sessionSetup = sessionSetup
    }

    private static func open(
        _ address: PostgresAddress, _ applicationName: String, _ sessionSetup: String?
    ) throws(PostgresError) -> PostgresConnection {
        let fresh = try PostgresConnection(address, applicationName: applicationName)
        if let sessionSetup { _ = try fresh.execute(sessionSetup) }
        return fresh
    }

    /// The server process of the current connection (tests terminate it to
    /// break the connection); nil while there is none.
    package var serverPID: Int32? { connection?.serverPID }

    /// Runs `call` on an open connection; after a broken connection, on a new
    /// one, until it succeeds, fails for another reason (thrown at once), or
    /// `patience` runs out.
    package func run<T>(_ call: (PostgresConnection) throws(PostgresError) -> T) throws(PostgresError) -> T {
        try run(patience: patience, call)
    }

    /// `run` with a patience of this call's own (a heartbeat waits a third of
    /// the lease, a claim the worker's whole outage). With none (0), the
    /// first failure is thrown as it came: a database down at start.
    package func run<T>(patience: Double, _ call: (PostgresConnection) throws(PostgresError) -> T) throws(PostgresError) -> T {
        var firstFailure: UInt64?
        var backoff = Self.firstBackoff
        var attempt = 0
        while true {
            let error: PostgresError
            do throws(PostgresError) {
                let open = try current()
                return try call(open)
            } catch let failure {
                error = failure
            }
            guard error.isConnectionLoss || error.isTransient else { throw error }
            // A broken connection stays broken: the next attempt makes a new one.
            if error.isConnectionLoss {
                connection = nil
                reconnected = true
            }
            guard patience > 0 else { throw error }
            let now = DispatchTime.now().uptimeNanoseconds
            let started = firstFailure ?? now
            firstFailure = started
            let elapsed = Double(now - started) / 1e9
            guard elapsed < patience else {
                // A deadlock that kept coming back is still the statement's.
                guard error.isConnectionLoss else { throw error }
                var gaveUp = PostgresError(
                    .connection,
                    "\(Self.unreachable) at \(address) is unreachable: tried for \(Self.seconds(elapsed)) (\(attempt + 1) attempts); last error: \(error.message)",
                    sqlState: error.sqlState)
                gaveUp.lastError = error.message
                gaveUp.triedFor = elapsed
                throw gaveUp
            }
            // The first retry goes at once: a terminated backend or a recycled
            // connection is back as soon as a new one is made. Later ones wait.
            if attempt > 0 {
                let wait = min(backoff, patience - elapsed)
                if wait > 0 { Thread.sleep(forTimeInterval: wait) }
                backoff = min(backoff * 2, Self.longestBackoff)
            }
            attempt += 1
        }
    }

    /// Opens the connection now unless it is open, without waiting: a
    /// queue worker opens every connection it needs at start, so that a
    /// server that refuses one (a role's connection limit, say) is reported
    /// at once, before any download, not after `patience` at its first use.
    package func connect() throws(PostgresError) {
        _ = try current()
    }

    /// Drops the connection (the next call makes a new one).
    package func close() { connection = nil }

    private func current() throws(PostgresError) -> PostgresConnection {
        if let connection, connection.isOpen { return connection }
        connection = nil
        let fresh = try Self.open(address, applicationName, sessionSetup)
        connection = fresh
        return fresh
    }

    /// "0.4 s", "30 s".
    private static func seconds(_ value: Double) -> String {
        value < 10 ? String(format: "%.1f s", value) : "\(Int(value.rounded())) s"
    }
}
