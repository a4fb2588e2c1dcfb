import Synchronization

/// Which downloads of one engine are open (queued, running, paused or waiting
/// for a hook), known from any thread at once: `add` deduplicates against them
/// only, and `pause`, `resume` and `cancel` answer whether their id was open.
///
/// The engine thread reports each end (`ended`) before it publishes the
/// terminal event, so a program that adds a request again when it sees that
/// event gets a new download.
final class DownloadRegistry: Sendable {
    /// The serial of the engine whose ids these are.
    let engine: Int
    /// The command line's rule: an ended request keeps its id for the whole run
    /// (`EngineConfiguration.deduplicatesWholeRun`).
    let wholeRun: Bool
    private struct State {
        var lastNumber = 0
        /// The id of each request key: open downloads only, or every download
        /// of the run with `wholeRun`.
        var byKey: [String: DownloadID] = [:]
        var open: Set<DownloadID> = []
        /// After the stop: nothing is open any more, and new ids stay closed.
        var stopped = false
    }
    private let state = Mutex<State>(State())

    init(engine: Int, wholeRun: Bool = false) {
        self.engine = engine
        self.wholeRun = wholeRun
    }

    /// An id for each request: the open download's for a request already open
    /// (or repeated in `requests`), else a new one. `post` gets every id and
    /// the new ones with their requests, in order, under the lock: the engine
    /// sees ids in the order made, and no download given to `post` can end
    /// before `post` returns (a task attaches to it there).
    func admit(
        _ requests: some Sequence<DownloadRequest>,
        post: (_ ids: [DownloadID], _ new: [(DownloadID, DownloadRequest)]) -> Void
    ) -> [DownloadID] {
        state.withLock { state in
            var ids: [DownloadID] = []
            var new: [(DownloadID, DownloadRequest)] = []
            for var request in requests {
                // One form of each URL from here on: queue, state, events (URLNormalization).
                request.url = URLNormalization.normalize(request.url)
                let key = request.deduplicationKey
                if let id = state.byKey[key] {
                    ids.append(id)
                    continue
                }
                state.lastNumber += 1
                let id = DownloadID(state.lastNumber, engine: engine)
                if !state.stopped {
                    state.byKey[key] = id
                    state.open.insert(id)
                }
                ids.append(id)
                new.append((id, request))
            }
            post(ids, new)
            return ids
        }
    }

    /// Whether `id` is this engine's and still open.
    func isOpen(_ id: DownloadID) -> Bool {
        id.engine == engine && state.withLock { $0.open.contains(id) }
    }

    /// Whether this engine made `id`.
    func owns(_ id: DownloadID) -> Bool {
        id.engine == engine && id.rawValue >= 1 && state.withLock { id.rawValue <= $0.lastNumber }
    }

    /// The id of this engine's download number `number`, if it made one.
    func id(number: Int) -> DownloadID? {
        let id = DownloadID(number, engine: engine)
        return owns(id) && id.rawValue == number ? id : nil
    }

    /// The download of `request` ended (on the engine thread, before its
    /// terminal event).
    func ended(_ id: DownloadID, _ request: DownloadRequest) {
        // The key is made again here rather than kept per open download: a
        // queue of 100,000 would hold every key twice.
        let key = wholeRun ? nil : request.deduplicationKey
        state.withLock { state in
            guard state.open.remove(id) != nil, let key, state.byKey[key] == id else { return }
            state.byKey[key] = nil
        }
    }

    /// The engine stopped: nothing is open any more.
    func close() {
        state.withLock { state in
            state.stopped = true
            state.byKey = [:]
            state.open = []
        }
    }
}
