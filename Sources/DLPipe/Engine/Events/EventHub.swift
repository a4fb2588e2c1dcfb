import Synchronization

/// Hands each event to every subscriber's stream and observer. Safe from any
/// thread; publishing never waits for a reader (`EventSubscription`).
final class EventHub: Sendable {
    private struct State {
        /// Streams of every event.
        var all: [ObjectIdentifier: EventSubscription] = [:]
        /// What `DownloadTask`s of an open download wait on: their streams and
        /// the outcome. Kept until the terminal event (or the stop), even when
        /// every stream is gone, so that `result` always resolves.
        var byDownload: [DownloadID: TaskEntry] = [:]
        /// After `finish`, new streams end at once.
        var finished = false
    }
    private let state = Mutex<State>(State())
    private let observers = Mutex<[@Sendable (DownloadEvent) -> Void]>([])

    struct TaskEntry {
        var subscriptions: [EventSubscription] = []
        let outcome = OutcomeBox()
    }

    /// A new stream of the events published from now on; an engine that
    /// stopped gives a stream that ends at once.
    func subscribe() -> AsyncStream<DownloadEvent> {
        let subscription = EventSubscription(only: nil) { [weak self] in self?.remove($0) }
        let added = state.withLock { state in
            guard !state.finished else { return false }
            state.all[ObjectIdentifier(subscription)] = subscription
            return true
        }
        if !added { subscription.finish() }
        return subscription.stream()
    }

    /// A stream of `download`'s events from now on, ending with its terminal
    /// event, and the box of its outcome. The caller makes sure the download is
    /// open and has not published its terminal event yet (it attaches under the
    /// registry's lock, before the add is posted); after the stop, both end at
    /// once (`stopped`).
    func attach(_ download: DownloadID) -> (AsyncStream<DownloadEvent>, OutcomeBox) {
        let subscription = EventSubscription(only: download) { [weak self] in self?.remove($0) }
        let box = state.withLock { state -> OutcomeBox? in
            guard !state.finished else { return nil }
            state.byDownload[download, default: TaskEntry()].subscriptions.append(subscription)
            return state.byDownload[download]!.outcome
        }
        if let box { return (subscription.stream(), box) }
        subscription.finish()
        let stopped = OutcomeBox()
        stopped.resolve(.stopped)
        return (subscription.stream(), stopped)
    }

    /// A callback run on the engine thread for every event; it must return quickly.
    func observe(_ observer: @escaping @Sendable (DownloadEvent) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    /// Subscriptions the hub holds (for tests: streams that ended are gone).
    var subscriberCount: Int {
        state.withLock { state in state.all.count + state.byDownload.values.reduce(0) { $0 + $1.subscriptions.count } }
    }

    /// Events waiting in every subscription (for tests: bounded by the downloads).
    var waitingCount: Int {
        let (all, byDownload) = state.withLock { ($0.all, $0.byDownload) }
        return all.values.reduce(0) { $0 + $1.waiting }
            + byDownload.values.flatMap(\.subscriptions).reduce(0) { $0 + $1.waiting }
    }

    func publish(_ event: DownloadEvent) {
        for observer in observers.withLock({ $0 }) { observer(event) }
        let (all, own) = state.withLock { state -> ([ObjectIdentifier: EventSubscription], TaskEntry?) in
            guard !state.byDownload.isEmpty, let id = event.download?.id else { return (state.all, nil) }
            // A download's tasks are done with its terminal event.
            return (state.all, event.isTerminal ? state.byDownload.removeValue(forKey: id) : state.byDownload[id])
        }
        for subscription in all.values { subscription.deliver(event) }
        guard let own else { return }
        for subscription in own.subscriptions { subscription.deliver(event) }
        if let outcome = event.outcome {
            // The terminal event is in the tasks' streams before their result resolves.
            for subscription in own.subscriptions { subscription.finish() }
            own.outcome.resolve(outcome)
        }
    }

    /// Ends every stream: readers take what waits, then the end. Tasks still
    /// waiting (downloads added as the engine stopped) end as `stopped`.
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
        for entry in byDownload.values {
            for subscription in entry.subscriptions { subscription.finish() }
            entry.outcome.resolve(.stopped)
        }
    }

    private func remove(_ subscription: EventSubscription) {
        state.withLock { state in
            if let download = subscription.only {
                // The entry stays (its outcome box) until the download ends.
                state.byDownload[download]?.subscriptions.removeAll { $0 === subscription }
            } else {
                state.all[ObjectIdentifier(subscription)] = nil
            }
        }
    }
}
