import Synchronization

/// Hands each event to every subscriber's stream and observer. Safe from any thread.
final class EventHub: Sendable {
    private let subscribers = Mutex<[AsyncStream<DownloadEvent>.Continuation]>([])
    private let observers = Mutex<[@Sendable (DownloadEvent) -> Void]>([])

    /// A new stream of the events published from now on.
    func subscribe() -> AsyncStream<DownloadEvent> {
        let (stream, continuation) = AsyncStream<DownloadEvent>.makeStream(
            bufferingPolicy: .unbounded)
        subscribers.withLock { $0.append(continuation) }
        return stream
    }

    /// A callback run on the engine thread for every event; it must return quickly.
    func observe(_ observer: @escaping @Sendable (DownloadEvent) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    func publish(_ event: DownloadEvent) {
        for observer in observers.withLock({ $0 }) { observer(event) }
        for continuation in subscribers.withLock({ $0 }) { continuation.yield(event) }
    }

    /// Ends every stream.
    func finish() {
        for continuation in subscribers.withLock({ $0 }) { continuation.finish() }
    }
}
