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
    private let loop: EngineLoop
    private let hub = EventHub()
    /// Every request queued so far, by deduplication key.
    private let known = Mutex<[String: DownloadID]>([:])

    /// Creates the output directory when missing and starts the engine's thread.
    public init(configuration: EngineConfiguration = EngineConfiguration(), hooks: (any DownloadHooks)? = nil)
        throws(DownloadError)
    {
        if let code = FileSystem.makeDirectories(configuration.directory) {
            throw FileErrors.io("cannot create the output directory", configuration.directory, errno: code)
        }
        guard let root = FileSystem.realPath(configuration.directory) else {
            throw FileErrors.io("cannot resolve the output directory", configuration.directory)
        }
        var store: StateStore?
        if let statePath = configuration.statePath {
            do {
                store = try StateStore(path: statePath)
            } catch {
                throw DownloadError(.io, error.message)
            }
        }
        loop = EngineLoop(configuration: configuration, root: root, hooks: hooks, events: hub, store: store)
        loop.start()
    }

    deinit {
        loop.post(.stop(done: nil))
        hub.finish()
    }

    /// The absolute output directory.
    public var directory: String { loop.root }

    /// Events from now on, as an AsyncSequence. Subscribe before adding downloads
    /// to see all of theirs. Every download ends with exactly one terminal event.
    public func events() -> AsyncStream<DownloadEvent> { hub.subscribe() }

    /// Runs `observer` on the engine's thread for each event (it must be quick).
    public func observe(_ observer: @escaping @Sendable (DownloadEvent) -> Void) {
        hub.observe(observer)
    }

    /// Queues a download and returns its id at once.
    /// A repeat of a request already queued (same URL, same target; see
    /// `DownloadRequest.deduplicationKey`) is not queued again: its id comes back.
    @discardableResult
    public func add(_ request: DownloadRequest) -> DownloadID {
        known.withLock { known in
            if let id = known[request.deduplicationKey] { return id }
            let id = DownloadID(known.count + 1)
            known[request.deduplicationKey] = id
            // Posted under the lock so the loop sees ids in order.
            loop.post(.add(id, request))
            return id
        }
    }

    /// Queues several downloads at once and returns their ids, in order (a
    /// repeat gets the first id back, as with `add`). They all reach the queue
    /// in one step, before any of them starts, so their priorities order them
    /// from the first free slot on: one by one, the first could take a slot
    /// before a more urgent one was even queued.
    @discardableResult
    public func add(contentsOf requests: some Sequence<DownloadRequest>) -> [DownloadID] {
        known.withLock { known in
            var ids: [DownloadID] = []
            var new: [(DownloadID, DownloadRequest)] = []
            for request in requests {
                if let id = known[request.deduplicationKey] {
                    ids.append(id)
                    continue
                }
                let id = DownloadID(known.count + 1)
                known[request.deduplicationKey] = id
                ids.append(id)
                new.append((id, request))
            }
            // Posted under the lock so the loop sees ids in order.
            if !new.isEmpty { loop.post(.addAll(new)) }
            return ids
        }
    }

    /// Ends a download as failed (a hook that broke, for example), stopping its transfer.
    public func fail(_ id: DownloadID, _ error: DownloadError) { loop.post(.fail(id, error)) }

    /// Queues a download of `url` with default settings.
    @discardableResult
    public func add(_ url: String) -> DownloadID { add(DownloadRequest(url: url)) }

    /// Stops a download, keeping its part file; `resume` continues it with a Range request.
    public func pause(_ id: DownloadID) { loop.post(.pause(id)) }

    /// Queues a paused download again.
    public func resume(_ id: DownloadID) { loop.post(.resume(id)) }

    /// Ends a download for good, removing its part file.
    public func cancel(_ id: DownloadID) { loop.post(.cancel(id)) }

    /// Waits for one download's outcome (nil if the id is unknown or the engine
    /// stopped, or the download ended earlier and `keepsOutcomes` is off).
    public func outcome(of id: DownloadID) async -> DownloadOutcome? {
        await withCheckedContinuation { continuation in
            loop.post(.waitOutcome(id, { continuation.resume(returning: $0) }))
        }
    }

    /// Waits until the queue is drained and no hook is running; returns the counts
    /// and the exit code a `drained` hook chose, if any.
    public func waitUntilDrained() async -> (summary: RunSummary, exitCode: Int?) {
        await withCheckedContinuation { continuation in
            loop.post(.waitIdle({ continuation.resume(returning: ($0, $1)) }))
        }
    }

    /// Stops every transfer (part files stay) and the engine's thread; ends event streams.
    public func shutdown() {
        loop.post(.stop(done: nil))
        hub.finish()
    }

    /// Like `shutdown`, and returns once every transfer has stopped and its part
    /// file is closed (a clean stop on SIGINT).
    public func stop() async {
        await withCheckedContinuation { continuation in
            loop.post(.stop(done: { continuation.resume() }))
        }
        hub.finish()
    }
}
