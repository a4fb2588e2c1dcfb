/// One download, as `DownloadEngine.addTask` returns it: bound to its engine,
/// with its own events and an awaited result (URLSession's task, Nuke's
/// ImageTask). Sendable: pass it to any task or thread.
///
/// ```swift
/// let task = engine.addTask("https://example.org/a.iso")
/// for await event in task.events { if case .progress(_, let p) = event { show(p.fraction) } }
/// if case .finished(let file) = await task.result { open(file.path) }
/// ```
///
/// A task holds its engine: the engine lives as long as one of its tasks.
public struct DownloadTask: Sendable {
    /// The download's id in its engine (as `add` returns it).
    public let id: DownloadID
    /// The download's own events, from `queued` to its terminal event, where the
    /// stream ends. Read it from one loop; while that loop lags, progress is
    /// coalesced to the latest and the other events wait. After a stop it ends
    /// at once. Drop every copy of the task (or cancel the loop reading it) and
    /// its events are no longer kept.
    public let events: AsyncStream<DownloadEvent>
    private let engine: DownloadEngine
    private let outcome: OutcomeBox

    init(id: DownloadID, engine: DownloadEngine, events: AsyncStream<DownloadEvent>, outcome: OutcomeBox) {
        self.id = id
        self.engine = engine
        self.events = events
        self.outcome = outcome
    }

    /// How the download ended, once it has: its terminal event is already in
    /// `events` by then. Cancelling the task that awaits it cancels the
    /// download (the result is then `.cancelled`, or how it ended if it ended
    /// first). After a stop it is `.stopped` at once.
    public var result: DownloadOutcome {
        get async {
            await withTaskCancellationHandler {
                await outcome.value()
            } onCancel: { [engine, id] in
                engine.cancel(id)
            }
        }
    }

    /// The finished file, or the error: `DownloadError` for a failed download,
    /// `DownloadTask.NotFinished` for one handled (a failure a hook dealt
    /// with), skipped, cancelled or stopped.
    public var value: FinishedInfo {
        get async throws {
            switch await result {
            case .finished(let file): return file
            case .failed(let error): throw error
            case let other: throw NotFinished(outcome: other)
            }
        }
    }

    /// Stops the transfer, keeping the part file (`DownloadEngine.pause`).
    /// False once the download has ended.
    @discardableResult
    public func pause() -> Bool { engine.pause(id) }

    /// Queues the paused download again. False once it has ended.
    @discardableResult
    public func resume() -> Bool { engine.resume(id) }

    /// Ends the download for good, removing its part file. False once it has ended.
    @discardableResult
    public func cancel() -> Bool { engine.cancel(id) }

    /// What `value` throws for a download that ended without a file and
    /// without an error of its own.
    public struct NotFinished: Error, Sendable, Hashable {
        /// `.handled`, `.skipped`, `.cancelled` or `.stopped`.
        public let outcome: DownloadOutcome
    }
}
