import Synchronization

/// One `events()` stream: the hub delivers into it from the engine thread without
/// ever waiting, and the reader takes events at its own pace. A reader that
/// lags sees each download's progress coalesced (`EventQueue`).
final class EventSubscription: Sendable {
    private struct State {
        var queue = EventQueue()
        /// The reader parked in `next()`, only while the queue is empty.
        var reader: CheckedContinuation<DownloadEvent?, Never>?
        /// No more events come: the reader takes what waits, then nil.
        var finished = false
    }
    private let state = Mutex<State>(State())
    /// Events of this download only; nil for every event.
    let only: DownloadID?
    /// Called once when the reader goes away (the hub forgets the subscription).
    private let onEnd: Mutex<(@Sendable (EventSubscription) -> Void)?>

    init(only: DownloadID? = nil, onEnd: (@Sendable (EventSubscription) -> Void)?) {
        self.only = only
        self.onEnd = Mutex(onEnd)
    }

    /// Events waiting for the reader (for tests: it stays bounded by the downloads).
    var waiting: Int { state.withLock { $0.queue.count } }

    /// Hands an event to the reader, or queues it. Never blocks on the reader.
    func deliver(_ event: DownloadEvent) {
        let reader = state.withLock { state -> CheckedContinuation<DownloadEvent?, Never>? in
            guard !state.finished else { return nil }
            if let reader = state.reader {
                state.reader = nil
                return reader
            }
            state.queue.push(event)
            return nil
        }
        reader?.resume(returning: event)
    }

    /// No more events: the reader gets what is queued, then the end.
    func finish() {
        let reader = state.withLock { state -> CheckedContinuation<DownloadEvent?, Never>? in
            state.finished = true
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume(returning: nil)
    }

    /// The reader is gone (its stream was dropped or its task cancelled): drop
    /// what waits and leave the hub.
    func end() {
        let reader = state.withLock { state -> CheckedContinuation<DownloadEvent?, Never>? in
            state.finished = true
            state.queue.removeAll()
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume(returning: nil)
        if let onEnd = onEnd.withLock({ callback in defer { callback = nil }; return callback }) { onEnd(self) }
    }

    /// The next event, or nil once finished.
    func next() async -> DownloadEvent? {
        let ready = state.withLock { state -> DownloadEvent?? in
            if let event = state.queue.pop() { return .some(event) }
            return state.finished ? .some(nil) : nil
        }
        if let ready { return ready }
        return await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> DownloadEvent?? in
                if let event = state.queue.pop() { return .some(event) }
                if state.finished { return .some(nil) }
                state.reader = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// The stream a caller reads. It holds the subscription through a `Reader`
    /// whose end (the last copy of the stream dropped) ends the subscription, so
    /// a stream that is never read, or read only in part, leaves the hub.
    func stream() -> AsyncStream<DownloadEvent> {
        let reader = Reader(self)
        return AsyncStream(unfolding: { await reader.subscription.next() }, onCancel: { reader.subscription.end() })
    }

    private final class Reader: Sendable {
        let subscription: EventSubscription
        init(_ subscription: EventSubscription) { self.subscription = subscription }
        deinit { subscription.end() }
    }
}
