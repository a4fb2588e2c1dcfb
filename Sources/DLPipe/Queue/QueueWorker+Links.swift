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
