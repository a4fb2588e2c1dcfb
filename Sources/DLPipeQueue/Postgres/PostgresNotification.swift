import DLPipe

/// One NOTIFY that a listening connection received.
package struct PostgresNotification: Sendable, Equatable {
    package let channel: String
    package let payload: String
    /// The backend process that sent it (our own when we notified ourselves).
    package let senderPID: Int32
}
