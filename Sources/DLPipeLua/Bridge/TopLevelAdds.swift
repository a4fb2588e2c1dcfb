import DLPipe

/// The downloads a job adds at its top level, before the engine exists, with
/// the ids the engine will give them (1, 2, 3... in add order) and their keys
/// (a repeat gets the first id back).
///
/// The first `inMemoryLimit` stay in memory; past them, a request that may be
/// stored (`PendingRule.storable`) goes to a scratch SQLite file of its own
/// (`SQLitePendingRequests`, in SQLite's temporary folder, removed when
/// closed): a job that queues a million URLs at its top level would otherwise
/// hold a million requests and keys here and the same again in the engine.
/// If that file cannot be made or written, requests stay in memory.
/// Used on the Lua thread only.
final class TopLevelAdds {
    /// Requests 1...n, in id order, while none was stored: an array, since a
    /// table keyed by id spent most of an add growing and rehashing.
    private var leading: [DownloadRequest] = []
    /// Requests kept in memory after the first stored one.
    private var inMemory: [Int: DownloadRequest] = [:]
    private var keys: [String: Int] = [:]
    private var store: (any PendingRequests)?
    private var storeFailed = false
    private var stored = 0
    /// Downloads added so far (the last id given).
    private(set) var count = 0
    let inMemoryLimit: Int
    private let makeStore: () throws(StateFailure) -> any PendingRequests
    private static let pageSize = 1024

    init(inMemoryLimit: Int = 8192,
         makeStore: @escaping () throws(StateFailure) -> any PendingRequests = { () throws(StateFailure) in
             try SQLitePendingRequests(besideState: nil)
         }) {
        self.inMemoryLimit = inMemoryLimit
        self.makeStore = makeStore
    }

    /// The id of a request with this key kept in memory, if any. One in the
    /// store is found by `add` (its insert finds the key), so that a new URL,
    /// which is what a long list holds, costs the store one statement, not two.
    func id(ofKey key: String) -> Int? { keys[key] }

    /// Adds a request whose key `id(ofKey:)` did not know: its new id, or the
    /// id of the stored request with the same key.
    func add(key: String, _ request: DownloadRequest) -> Int {
        count += 1
        if keys.count >= inMemoryLimit, PendingRule.storable(request), let store = openStore() {
            do {
                if let known = try store.insert(count, key: key, request) {
                    count -= 1
                    return known
                }
                stored += 1
                return count
            } catch {
                // Kept in memory below, unless the store has the key: nothing is lost.
                if stored > 0, let known = try? store.number(ofKey: key) {
                    count -= 1
                    return known
                }
            }
        }
        if leading.count == count - 1 { leading.append(request) } else { inMemory[count] = request }
        keys[key] = count
        return count
    }

    /// A request kept in memory, by id.
    private func kept(_ number: Int) -> DownloadRequest? {
        number >= 1 && number <= leading.count ? leading[number - 1] : inMemory[number]
    }

    private func openStore() -> (any PendingRequests)? {
        if store == nil && !storeFailed {
            do {
                store = try makeStore()
            } catch {
                storeFailed = true
            }
        }
        return store
    }

    /// Why the requests could not all be read back (`requests`), if so.
    private(set) var readFailure: ScriptError?

    /// Every added request in id order, read back from the store a page at
    /// a time as the sequence is consumed. A stored request that cannot be
    /// read back ends the sequence early, and `readFailure` says why.
    func requests() -> some Sequence<DownloadRequest> {
        var next = 1
        return AnySequence { () -> AnyIterator<[DownloadRequest]> in
            AnyIterator { [self] in
                guard readFailure == nil, next <= count else { return nil }
                do throws(ScriptError) {
                    let page = try page(from: next)
                    next += page.count
                    return page
                } catch {
                    readFailure = error
                    return nil
                }
            }
        }.lazy.joined()
    }

    private func page(from first: Int) throws(ScriptError) -> [DownloadRequest] {
        guard first <= count else { return [] }
        let last = min(count, first + Self.pageSize - 1)
        var fromStore: [Int: DownloadRequest] = [:]
        if stored > 0, (first...last).contains(where: { kept($0) == nil }) {
            do throws(StateFailure) {
                for (number, request) in try store!.requests(from: first, limit: last - first + 1) where number <= last {
                    fromStore[number] = request
                }
            } catch {
                throw ScriptError("the downloads the job added could not be read back: \(error.message)")
            }
        }
        var page: [DownloadRequest] = []
        for number in first...last {
            guard let request = kept(number) ?? fromStore[number] else {
                throw ScriptError("the downloads the job added could not be read back: download \(number) is missing")
            }
            page.append(request)
        }
        return page
    }
}

