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
        /// The id of each request key kept in memory: open downloads only, or
        /// every download of the run with `wholeRun`.
        var byKey: [String: DownloadID] = [:]
        /// Open downloads, by number.
        var open = NumberSet()
        /// Downloads whose request (and key) `pending` holds, not memory.
        var stored = NumberSet()
        /// The store, once the first request went there; nil before.
        var pending: (any PendingRequests)?
        /// The store could not be made: everything stays in memory.
        var storeFailed = false
        /// After the stop: nothing is open any more, and new ids stay closed.
        var stopped = false
    }
    private let state = Mutex<State>(State())
    /// Makes the store of queued requests when the memory's share is full;
    /// nil keeps every request in memory (an engine without state).
    private let makeStore: (@Sendable () throws(StateFailure) -> any PendingRequests)?
    /// Requests kept in memory before the store is used: a run of a few
    /// thousand URLs never touches it (set 1 stays as fast as before), and a
    /// run of a million keeps about 4 MB of them.
    let inMemoryLimit: Int
    /// Requests handed to the engine per command: a long list crosses to the
    /// engine thread in pieces, never as one array of a million requests.
    static let chunk = 4096

    init(engine: Int, wholeRun: Bool = false, inMemoryLimit: Int = 8192,
         store: (@Sendable () throws(StateFailure) -> any PendingRequests)? = nil) {
        self.engine = engine
        self.wholeRun = wholeRun
        self.inMemoryLimit = inMemoryLimit
        self.makeStore = store
    }

    /// An id for each request: the open download's for a request already open
    /// (or repeated in `requests`), else a new one. `post` gets the ids so far
    /// and the new ones with their requests, in order, under the lock, in
    /// pieces of at most `chunk` (and once more at the end, maybe with none):
    /// the engine sees ids in the order made, and no download given to `post`
    /// can end before `admit` returns (a task attaches to it there).
    func admit(
        _ requests: some Sequence<DownloadRequest>,
        post: (_ ids: [DownloadID], _ new: [AdmittedRequest]) -> Void
    ) -> [DownloadID] {
        state.withLock { state in
            var ids: [DownloadID] = []
            var new: [AdmittedRequest] = []
            for var request in requests {
                // One form of each URL from here on: queue, state, events (URLNormalization).
                request.url = URLNormalization.normalize(request.url)
                if let problem = URLLimit.problem(request.url) {
                    // Refused: a download of its own that fails at once, kept
                    // out of the keys and the store, its URL shown shortened.
                    state.lastNumber += 1
                    let id = DownloadID(state.lastNumber, engine: engine)
                    if !state.stopped { state.open.insert(id.rawValue) }
                    ids.append(id)
                    request.url = URLLimit.shown(request.url)
                    new.append(AdmittedRequest(id: id, request: request, stored: false, refused: problem))
                    continue
                }
                let key = request.deduplicationKey
                if let id = known(key, request, &state) {
                    ids.append(id)
                    continue
                }
                state.lastNumber += 1
                let id = DownloadID(state.lastNumber, engine: engine)
                var stored = false
                if !state.stopped {
                    if let known = store(id, key, request, &state) {
                        // Stored meanwhile under this key: cannot happen while
                        // the lock is held, but the store is the authority.
                        state.lastNumber -= 1
                        ids.append(known)
                        continue
                    }
                    stored = state.stored.contains(id.rawValue)
                    if !stored { state.byKey[key] = id }
                    state.open.insert(id.rawValue)
                }
                ids.append(id)
                new.append(AdmittedRequest(id: id, request: request, stored: stored))
                if new.count >= Self.chunk {
                    post(ids, new)
                    new = []
                }
            }
            post(ids, new)
            return ids
        }
    }

    /// Admits requests under numbers given from outside (a shared queue's row
    /// ids), without deduplicating: the queue did that, and a download ended
    /// here may come back under its number (a retry another worker scheduled).
    /// Never stored: a worker holds only what it claimed, a few at a time.
    func admitNumbered(_ claimed: [ClaimedRequest], post: ([AdmittedRequest]) -> Void) {
        state.withLock { state in
            var new: [AdmittedRequest] = []
            for claim in claimed where !state.stopped && !state.open.contains(claim.number) {
                state.lastNumber = max(state.lastNumber, claim.number)
                state.open.insert(claim.number)
                new.append(AdmittedRequest(
                    id: DownloadID(claim.number, engine: engine), request: claim.request, stored: false,
                    priorAttempts: claim.priorAttempts))
            }
            post(new)
        }
    }

    /// The id of an admitted request with this key: in memory, or in the store.
    private func known(_ key: String, _ request: DownloadRequest, _ state: inout State) -> DownloadID? {
        if let id = state.byKey[key] { return id }
        guard !state.stopped, !state.stored.isEmpty, let pending = state.pending,
            PendingRule.storable(request)
        else { return nil }
        // A store that cannot answer: the request is queued (a repeat at worst, never a loss).
        guard let number = try? pending.number(ofKey: key) else { return nil }
        return DownloadID(number, engine: engine)
    }

    /// Stores a new request once memory's share is used, when it may be
    /// stored; returns the id of a request the store already has under `key`.
    private func store(_ id: DownloadID, _ key: String, _ request: DownloadRequest, _ state: inout State) -> DownloadID? {
        guard let makeStore, !state.storeFailed, state.byKey.count >= inMemoryLimit, PendingRule.storable(request)
        else { return nil }
        if state.pending == nil {
            do {
                state.pending = try makeStore()
            } catch {
                state.storeFailed = true  // memory, as without a store
                return nil
            }
        }
        do {
            if let known = try state.pending!.insert(id.rawValue, key: key, request) {
                return DownloadID(known, engine: engine)
            }
            state.stored.insert(id.rawValue)
        } catch {
            // Kept in memory instead: nothing is lost.
        }
        return nil
    }

    /// The request of a download whose request is stored (`AdmittedRequest.stored`).
    func storedRequest(_ id: DownloadID) throws(StateFailure) -> DownloadRequest? {
        let pending = state.withLock { $0.pending }
        return try pending?.request(id.rawValue)
    }

    /// Stored requests from `id` on, in order, at most `limit`.
    func storedRequests(from id: DownloadID, limit: Int) throws(StateFailure) -> [(number: Int, request: DownloadRequest)] {
        let pending = state.withLock { $0.pending }
        return try pending?.requests(from: id.rawValue, limit: limit) ?? []
    }

    /// Whether `id` is this engine's and still open.
    func isOpen(_ id: DownloadID) -> Bool {
        id.engine == engine && state.withLock { $0.open.contains(id.rawValue) }
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
            guard state.open.remove(id.rawValue), let key else { return }
            if state.byKey[key] == id {
                state.byKey[key] = nil
            } else if state.stored.remove(id.rawValue) {
                // A store that cannot forget keeps the key: a later repeat
                // gets this ended id back instead of a new download.
                try? state.pending?.remove(id.rawValue)
            }
        }
    }

    /// The engine stopped: nothing is open any more.
    func close() {
        state.withLock { state in
            state.stopped = true
            state.byKey = [:]
            state.open.removeAll()
        }
    }
}

/// A request the registry gave a new id, on its way to the engine thread.
struct AdmittedRequest {
    let id: DownloadID
    let request: DownloadRequest
    /// Whether the registry's store holds it: the engine then keeps only its
    /// id while it waits, and reads the request back when it starts.
    let stored: Bool
    /// Attempts made before this one elsewhere (a shared queue's retry).
    var priorAttempts = 0
    /// Why the request is refused before it starts (its URL is too long).
    var refused: String?
}
