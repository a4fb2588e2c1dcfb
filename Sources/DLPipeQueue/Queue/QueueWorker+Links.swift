import DLPipe
import Foundation
import Synchronization

extension QueueWorker {
    /// One of a worker's connections to the queue's database (a thread's
    /// own, or one behind a Mutex): it connects at its first statement and
    /// outlives a server restart or a dropped network (ReconnectingConnection).
    /// `idleInTransaction`: seconds after which the server ends the session
    /// when it sits in an open transaction without a statement. A worker's
    /// own transactions last milliseconds; one that sits longer belongs to a
    /// process that froze or died between two statements, and its row locks
    /// would hold every other worker's take-back and claims until then.
    static func link(_ address: PostgresAddress, _ label: String, idleInTransaction: Double? = nil) -> ReconnectingConnection {
        ReconnectingConnection(
            lazy: address, applicationName: "dlpipe \(label)",
            sessionSetup: idleInTransaction.map { "SET idle_in_transaction_session_timeout = \(Int($0 * 1000))" })
    }
}

extension QueueWorker {
    /// Opens `links` together, each on a thread of its own, and throws the
    /// first refusal once all have answered. One after the other, a worker's
    /// five connections took about 35 ms of its start (each waits for the
    /// server to start a backend); together, about as long as one.
    static func connectAll(_ links: [ReconnectingConnection]) throws(PostgresError) {
        let failure = Mutex<PostgresError?>(nil)
        let done = DispatchGroup()
        for link in links {
            done.enter()
            Thread.detachNewThread {
                ThreadName.set("dlpipe-connect")
                defer { done.leave() }
                do throws(PostgresError) {
                    try link.connect()
                } catch {
                    failure.withLock { first in if first == nil { first = error } }
                }
            }
        }
        done.wait()
        if let error = failure.withLock({ $0 }) { throw error }
    }
}
