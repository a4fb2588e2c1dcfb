import DLPipe
import Dispatch
import Synchronization

/// A PostgreSQL connection that lives on a serial queue of its own: the
/// answer to "which thread may touch it". Callers hand it work as closures
/// (`submit` with a completion, or `perform` from async code) and never wait
/// for the database on their own thread; the engine thread, which must never
/// block on the network, only submits.
///
/// The connection is made on the queue at first use, and made again at the
/// next use after it broke (a server restart, a dropped network): the work
/// that met the break gets its `connection` error, the next work a fresh
/// connection. State that lives in a session (LISTEN, a transaction) is gone
/// after such a reconnect; `connectionGeneration` lets a caller notice.
package final class PostgresSession: Sendable {
    package let address: PostgresAddress
    private let queue: DispatchQueue
    private let applicationName: String
    /// Touched only on `queue` (the Mutex makes that checkable, and costs nothing uncontended).
    private let state = Mutex<ConnectionState>(ConnectionState())

    private struct ConnectionState: ~Copyable {
        var connection: PostgresConnection?
        var generation = 0
    }

    package init(_ address: PostgresAddress, label: String, applicationName: String = "dlpipe") {
        self.address = address
        self.queue = DispatchQueue(label: label)
        self.applicationName = applicationName
    }

    /// Runs `work` on the session's queue with an open connection and hands
    /// its result to `completion` (on that queue: keep it short, or hop).
    package func submit<T: Sendable>(
        _ work: @escaping @Sendable (PostgresConnection) throws(PostgresError) -> T,
        completion: @escaping @Sendable (Result<T, PostgresError>) -> Void
    ) {
        queue.async { ThreadName.enter("dlpipe-pg"); completion(self.runHere(work)) }
    }

    /// `submit` for async callers: suspends (never blocks a thread) until the work is done.
    package func perform<T: Sendable>(
        _ work: @escaping @Sendable (PostgresConnection) throws(PostgresError) -> T
    ) async throws(PostgresError) -> T {
        let result: Result<T, PostgresError> = await withCheckedContinuation { continuation in
            submit(work) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// How many connections this session has made: a caller that keeps
    /// per-connection state (LISTEN) renews it when the number moved.
    package func connectionGeneration() async -> Int {
        await withCheckedContinuation { continuation in
            queue.async { ThreadName.enter("dlpipe-pg"); continuation.resume(returning: self.state.withLock { $0.generation }) }
        }
    }

    /// Closes the connection (on the queue, after the work already submitted).
    package func close() {
        queue.async { self.state.withLock { $0.connection = nil } }
    }

    private func runHere<T>(_ work: (PostgresConnection) throws(PostgresError) -> T) -> Result<T, PostgresError> {
        dispatchPrecondition(condition: .onQueue(queue))
        let connection: PostgresConnection
        do {
            connection = try state.withLock { state throws(PostgresError) -> PostgresConnection in
                if let open = state.connection, open.isOpen { return open }
                state.connection = nil
                let fresh = try PostgresConnection(address, applicationName: applicationName)
                state.connection = fresh
                state.generation += 1
                return fresh
            }
        } catch {
            return .failure(error)
        }
        do {
            return .success(try work(connection))
        } catch {
            return .failure(error)
        }
    }
}
