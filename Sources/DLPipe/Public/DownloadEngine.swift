import Foundation
import Synchronization

/// The download engine: queue downloads, watch their events, pause, resume and
/// cancel them, and wait for the queue to drain.
///
/// ```swift
/// let engine = try DownloadEngine(configuration: config)
/// let events = engine.events()
/// let id = engine.add(DownloadRequest(url: "https://example.org/a.iso"))
/// for await event in events { ... }
/// ```
public final class DownloadEngine: Sendable {
    /// How this engine reaches its loop, which lives on the engine thread.
    /// Internal for tests (`EngineInbox.heldBodiesWithdrawn`).
    let inbox = EngineInbox()
    /// The absolute output directory.
    public let directory: String
    /// Internal for tests: the subscriptions it holds.
    let hub = EventHub()
    /// Which downloads are open; makes this engine's ids.
    let registry: DownloadRegistry
    /// A shared queue's worker (`EngineConfiguration.queue`): adds go into
    /// the queue, and the worker hands this engine the downloads it claims
    /// (`addClaimed`). Nil on its own.
    let shared: (any QueueParticipant)?

    /// Creates the output directory when missing and starts the engine's thread.
    public convenience init(configuration: EngineConfiguration = EngineConfiguration(), hooks: DownloadHooks? = nil)
        throws(DownloadError)
    {
        let root = try Self.outputRoot(configuration.directory)
        var store: StateStore?
        if let statePath = configuration.statePath {
            do {
                store = try StateStore(path: statePath)
            } catch {
                throw DownloadError(.io, error.message)
            }
        }
        try self.init(configuration: configuration, root: root, hooks: hooks, state: store)
    }

    /// The output directory `directory`, created when missing, as an absolute
    /// canonical path (what the package init takes as `root`).
    package static func outputRoot(_ directory: String) throws(DownloadError) -> String {
        if let code = FileSystem.makeDirectories(directory) {
            throw FileErrors.io("cannot create the output directory", directory, errno: code)
        }
        guard let root = FileSystem.realPath(directory) else {
            throw FileErrors.io("cannot resolve the output directory", directory)
        }
        return root
    }

    /// An engine whose state is `state` (the SQLite store the public init
    /// opens, or another backend; nil: none), in the existing directory `root`
    /// (absolute and canonical). `configuration.statePath` is not read, except
    /// to place the scratch file of a long queue beside it.
    ///
    /// `pending` makes the store where queued requests past the first 8,192
    /// wait (`PendingRequests`), when the first is stored; nil: a scratch
    /// SQLite file beside `configuration.statePath` when there is a state,
    /// else memory. A shared queue passes its own.
    ///
    /// `configuration.queue` makes this engine a worker of a shared queue:
    /// `add` queues there, and only what the worker claims runs here
    /// (`addClaimed`).
    package init(configuration: EngineConfiguration, root: String, hooks: DownloadHooks?, state: (any DownloadState)?,
                 pending: (@Sendable () throws(StateFailure) -> any PendingRequests)? = nil)
        throws(DownloadError)
    {
        self.shared = configuration.queue
        // Past its first few thousand, a long queue waits in a scratch file
        // beside the state (SQLitePendingRequests), not in memory.
        var store = pending
        if store == nil, state != nil, let statePath = configuration.statePath {
            store = { () throws(StateFailure) -> any PendingRequests in try SQLitePendingRequests(besideState: statePath) }
        }
        registry = DownloadRegistry(
            engine: EngineSerial.next(), wholeRun: configuration.deduplicatesWholeRun, store: store)
        directory = root
        try EngineLoop.start(
            inbox: inbox, configuration: configuration, root: root, hooks: hooks, events: hub, registry: registry,
            store: state)
    }

    deinit {
        inbox.post(.stop(done: nil))
    }

    /// Whether an ended request keeps its id for the whole run (the command
    /// line's engine): then a job's own rule needs no table of its own.
    package var deduplicatesWholeRun: Bool { registry.wholeRun }

    /// Hook replies the engine dropped: a second reply to one call, or a
    /// reply that came after `EngineConfiguration.hookDeadline` had failed
    /// the download. Zero in a program whose hooks reply exactly once in time;
    /// anything else is a bug of the hooks, counted here so that it shows.
    public var ignoredHookReplies: Int { inbox.ignoredHookReplies.load(ordering: .relaxed) }

    /// Events from now on, as an AsyncSequence. Subscribe before adding downloads
    /// to see all of theirs. Every download ends with exactly one terminal event.
    ///
    /// The stream never slows the engine: while its reader lags, each
    /// download's progress events are coalesced to the latest, and the other
    /// events wait, in order (a few per download, whatever the bytes). It ends
    /// after the stop's events; after a stop, a new stream ends at once. Drop
    /// it (or cancel the task reading it) to unsubscribe.
    public func events() -> AsyncStream<DownloadEvent> { hub.subscribe() }

    /// Runs `observer` on the engine's thread for each event (it must be quick).
    public func observe(_ observer: @escaping @Sendable (DownloadEvent) -> Void) {
        hub.observe(observer)
    }

    /// Queues a download and returns its id at once.
    ///
    /// A repeat of a request still open (queued, running, paused or waiting
    /// for a hook: same URL, same target; see `DownloadRequest.deduplicationKey`)
    /// is not queued again: its id comes back. Once a download has ended (its
    /// terminal event), the same request is a new download with a new id: a
    /// reload, or a retry of a failed one. After a stop, the new download ends
    /// at once as `.stopped` (`outcome(of:)` says so) and publishes no event.
    @discardableResult
    public func add(_ request: DownloadRequest) -> DownloadID {
        if shared != nil { return add(contentsOf: CollectionOfOne(request))[0] }
        return registry.admit(CollectionOfOne(request)) { _, new in
            if let admitted = new.first { inbox.post(.add(admitted)) }
        }[0]
    }

    /// Queues several downloads at once and returns their ids, in order (a
    /// repeat of an open one gets its id back, as with `add`). They all reach
    /// the queue in one step, before any of them starts, so their priorities
    /// order them from the first free slot on: one by one, the first could take
    /// a slot before a more urgent one was even queued.
    @discardableResult
    public func add(contentsOf requests: some Sequence<DownloadRequest>) -> [DownloadID] {
        if let shared {
            let numbers = shared.add(requests.map { request in
                var request = request
                request.url = URLNormalization.normalize(request.url)
                return request
            })
            return numbers.map { DownloadID($0, engine: registry.engine) }
        }
        // A long list crosses in pieces (`DownloadRegistry.chunk`); none of
        // them starts before the last piece is queued.
        inbox.post(.holdStarts)
        defer { inbox.post(.releaseStarts) }
        return registry.admit(requests) { _, new in
            if !new.isEmpty { inbox.post(.addAll(new)) }
        }
    }

    /// Queues a download of `url` with default settings.
    @discardableResult
    public func add(_ url: String) -> DownloadID { add(DownloadRequest(url: url)) }

    /// Queues a download of `url` with default settings.
    @discardableResult
    public func add(_ url: URL) -> DownloadID { add(DownloadRequest(url: url)) }

    /// Queues a download as `add` does and returns its task handle: its own
    /// events from its first on, `pause`, `resume`, `cancel`, and its awaited
    /// `result`. A repeat of an open request gets a handle of that download.
    public func addTask(_ request: DownloadRequest) -> DownloadTask {
        var attached: (AsyncStream<DownloadEvent>, OutcomeBox)?
        let id = registry.admit(CollectionOfOne(request)) { ids, new in
            // Attached before the add is posted: the task sees `queued`.
            attached = hub.attach(ids[0])
            if let admitted = new.first { inbox.post(.add(admitted)) }
        }[0]
        let (events, outcome) = attached!
        return DownloadTask(id: id, engine: self, events: events, outcome: outcome)
    }

    /// Queues a download of `url` with default settings and returns its task handle.
    public func addTask(_ url: String) -> DownloadTask { addTask(DownloadRequest(url: url)) }

    /// Queues a download of `url` with default settings and returns its task handle.
    public func addTask(_ url: URL) -> DownloadTask { addTask(DownloadRequest(url: url)) }

    /// Ends a download as failed (a hook that broke, for example), stopping its
    /// transfer. False when `id` is not an open download of this engine.
    @discardableResult
    public func fail(_ id: DownloadID, _ error: DownloadError) -> Bool {
        send(.fail(id, error), to: id)
    }

    /// Stops a download, keeping its part file; `resume` continues it with a
    /// Range request. False when `id` is not an open download of this engine
    /// (another engine's, or one that ended): nothing happens then. In a
    /// worker of a shared queue, a download another live worker holds is
    /// paused there (true: passed on).
    @discardableResult
    public func pause(_ id: DownloadID) -> Bool { send(.pause(id), to: id) || forward(.pause, id) }

    /// Queues a paused download again. False when `id` is not an open download
    /// of this engine (nor, in a shared queue, one another live worker holds).
    @discardableResult
    public func resume(_ id: DownloadID) -> Bool { send(.resume(id), to: id) || forward(.resume, id) }

    /// A control of a shared queue's download that another worker holds,
    /// passed on to it.
    private func forward(_ control: QueueControl, _ id: DownloadID) -> Bool {
        guard let shared, id.engine == registry.engine else { return false }
        return shared.forward(control, of: id.rawValue)
    }

    /// Ends a download for good, removing its part file. False when `id` is not
    /// an open download of this engine (one that ended stays as it ended).
    @discardableResult
    public func cancel(_ id: DownloadID) -> Bool {
        if send(.cancel(id), to: id) { return true }
        // A shared queue's download that no worker holds yet is cancelled there.
        guard let shared, id.engine == registry.engine else { return false }
        switch shared.cancelQueued(id.rawValue, sendIfOpen: { send(.cancel(id), to: id) }) {
        case .cancelled(let cancelled):
            reportCancelledInQueue(cancelled, number: id.rawValue)
            return true
        case .sent, .onItsWay: return true
        case .untouched: return forward(.cancel, id)
        }
    }

    /// Reports a shared queue's download that ended cancelled before this
    /// engine held it, as it reports a download it cancels while it waits in
    /// its own queue: its `cancelled` event and count.
    package func reportCancelledInQueue(_ cancelled: CancelledInQueue, number: Int) {
        inbox.post(.participant(CancelledByQueue(info: cancelled.info(id: DownloadID(number, engine: registry.engine)))))
    }

    /// This engine's id of download number `number` (`DownloadID.rawValue`),
    /// for bridges that carry ids as numbers; nil if it made no such download.
    /// A shared queue's ids are its rows', the same in every worker.
    public func downloadID(number: Int) -> DownloadID? {
        if shared != nil { return number >= 1 ? DownloadID(number, engine: registry.engine) : nil }
        return registry.id(number: number)
    }

    /// Whether this engine is a worker of a shared queue: its ids are the
    /// queue's, not 1, 2, 3... in the order of adds.
    package var isShared: Bool { shared != nil }

    /// Starts downloads a shared queue's worker claimed, each under its id
    /// in the queue (`number`). None of them is added to the queue again.
    /// `liftingHolds`: the queue's claim says their hosts are due now, which
    /// ends this engine's own holds of them (`hostsDueByQueue`); a claim
    /// held ahead and started on a slot handed over says nothing of the kind.
    /// Nor does a claim of a host in `keepingHoldsOf`: this engine holds it
    /// for a Retry-After that the queue does not know of yet.
    package func addClaimed(_ claimed: [ClaimedRequest], liftingHolds: Bool = true, keepingHoldsOf kept: Set<String> = []) {
        inbox.post(.holdStarts)
        defer { inbox.post(.releaseStarts) }
        if liftingHolds {
            var urls = claimed.map(\.request.url)
            if !kept.isEmpty { urls.removeAll { URLParts($0).map { kept.contains($0.hostPort) } ?? false } }
            if !urls.isEmpty { inbox.post(.participant(HostsDueByQueue(urls: urls))) }
        }
        registry.admitNumbered(claimed) { new in
            if !new.isEmpty { inbox.post(.addAll(new)) }
        }
    }

    /// Caps transfers per host at `limit` from now on: a shared queue's
    /// worker follows the job-wide `per_host` that its claims read, which a
    /// later worker may have changed (its claims take slots at that value).
    package func setPerHost(_ limit: Int) {
        inbox.post(.participant(PerHostByQueue(limit: limit)))
    }

    /// Waits for one download's outcome. Nil at once for an id of another
    /// engine, and for a download that ended earlier when `keepsOutcomes` is
    /// off. After a stop it answers at once: `.stopped` for what was open at
    /// the stop or added after it. Cancelling the waiting task makes it
    /// return nil at once; the download goes on (`cancel(_:)` ends it, and
    /// cancelling a task awaiting `DownloadTask.result` ends it too).
    public func outcome(of id: DownloadID) async -> DownloadOutcome? {
        guard registry.owns(id) else { return nil }
        let answer = OnceContinuation<DownloadOutcome?>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                answer.wait(continuation)
                inbox.post(.waitOutcome(id, { answer.resume($0) }))
            }
        } onCancel: {
            answer.resume(nil)
        }
    }

    /// Waits until the queue is drained and no hook is running; returns the counts
    /// and the exit code a `drained` hook chose, if any. After a stop it
    /// answers at once with the counts at the stop. Cancelling the waiting
    /// task makes it return at once with the counts so far (the queue goes on).
    public func waitUntilDrained() async -> (summary: RunSummary, exitCode: Int?) {
        let answer = OnceContinuation<Drained>()
        let drained = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                answer.wait(continuation)
                inbox.post(.waitIdle({ answer.resume(Drained(summary: $0, exitCode: $1)) }))
            }
        } onCancel: { [inbox] in
            inbox.post(.countsNow({ answer.resume(Drained(summary: $0, exitCode: $1)) }))
        }
        return (drained.summary, drained.exitCode)
    }

    /// The counts since the engine started, as they are now, to `reply` (on
    /// the engine's thread): a `--follow` worker's summary of a run.
    package func countsNow(_ reply: @escaping @Sendable (RunSummary) -> Void) {
        inbox.post(.countsNow({ summary, _ in reply(summary) }))
    }

    /// `waitUntilDrained`'s answer as one Sendable value.
    private struct Drained: Sendable {
        let summary: RunSummary
        let exitCode: Int?
    }

    /// Stops every transfer (part files stay) and the engine's thread, without
    /// waiting: every open download gets its `stopped` event, then the event
    /// streams end. Calling it again does nothing.
    public func shutdown() {
        inbox.post(.stop(done: nil))
    }

    /// Like `shutdown`, and returns once every transfer has stopped, its part
    /// file is closed and the event streams have ended (a clean stop on
    /// SIGINT). Calling it again returns at once.
    public func stop() async {
        await withCheckedContinuation { continuation in
            inbox.post(.stop(done: { continuation.resume() }))
        }
    }

    /// Posts a control for `id` if it is open here.
    private func send(_ command: EngineLoop.Command, to id: DownloadID) -> Bool {
        guard registry.isOpen(id) else { return false }
        inbox.post(command)
        return true
    }
}
