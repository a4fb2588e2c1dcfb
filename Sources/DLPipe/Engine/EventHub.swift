import Synchronization

/// Hands each event to every subscriber's stream and observer. Safe from any
/// thread; publishing never waits for a reader (`EventSubscription`).
final class EventHub: Sendable {
    private struct State {
        /// Streams of every event.
        var all: [ObjectIdentifier: EventSubscription] = [:]
        /// Streams of one download's events (a `DownloadTask`'s).
        var byDownload: [DownloadID: [EventSubscription]] = [:]
        /// After `finish`, new streams end at once.
        var finished = false
    }
    private let state = Mutex<State>(State())
    private let observers = Mutex<[@Sendable (DownloadEvent) -> Void]>([])

    /// A new stream of the events published from now on; an engine that
    /// stopped gives a stream that ends at once.
    func subscribe() -> AsyncStream<DownloadEvent> { subscribe(only: nil, isOpen: { true }) }

    /// A new stream of `download`'s events from now on, ending with its terminal
    /// event. `isOpen` says whether the download has not ended yet; it is asked
    /// under the hub's lock, so a download that ends meanwhile either finds the
    /// stream (and ends it) or the stream ends at once.
    func subscribe(only download: DownloadID?, isOpen: () -> Bool) -> AsyncStream<DownloadEvent> {
        let subscription = EventSubscription(only: download) { [weak self] in self?.remove($0) }
        let added = state.withLock { state in
            guard !state.finished, isOpen() else { return false }
            if let download {
                state.byDownload[download, default: []].append(subscription)
            } else {
                state.all[ObjectIdentifier(subscription)] = subscription
            }
            return true
        }
        if !added { subscription.finish() }
        return subscription.stream()
    }

    /// A callback run on the engine thread for every event; it must return quickly.
    func observe(_ observer: @escaping @Sendable (DownloadEvent) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    /// Subscriptions the hub holds (for tests: streams that ended are gone).
    var subscriberCount: Int {
        state.withLock { state in state.all.count + state.byDownload.values.reduce(0) { $0 + $1.count } }
    }

    /// Events waiting in every subscription (for tests: bounded by the downloads).
    var waitingCount: Int {
        let (all, byDownload) = state.withLock { ($0.all, $0.byDownload) }
        return all.values.reduce(0) { $0 + $1.waiting } + byDownload.values.joined().reduce(0) { $0 + $1.waiting }
    }

    func publish(_ event: DownloadEvent) {
        for observer in observers.withLock({ $0 }) { observer(event) }
        let (all, own) = state.withLock { state -> ([ObjectIdentifier: EventSubscription], [EventSubscription]?) in
            guard !state.byDownload.isEmpty, let id = event.download?.id else { return (state.all, nil) }
            // A download's own streams end with its terminal event.
            return (state.all, event.isTerminal ? state.byDownload.removeValue(forKey: id) : state.byDownload[id])
        }
        for subscription in all.values { subscription.deliver(event) }
        guard let own else { return }
        for subscription in own {
            subscription.deliver(event)
            if event.isTerminal { subscription.finish() }
        }
    }

    /// Ends every stream: readers take what waits, then the end.
    func finish() {
        let (all, byDownload) = state.withLock { state in
            state.finished = true
            defer {
                state.all = [:]
                state.byDownload = [:]
            }
            return (state.all, state.byDownload)
        }
        for subscription in all.values { subscription.finish() }
        for subscription in byDownload.values.joined() { subscription.finish() }
    }

    private func remove(_ subscription: EventSubscription) {
        state.withLock { state in
            if let download = subscription.only {
                state.byDownload[download]?.removeAll { $0 === subscription }
                if state.byDownload[download]?.isEmpty == true { state.byDownload[download] = nil }
            } else {
                state.all[ObjectIdentifier(subscription)] = nil
            }
        }
    }
}
