import DLPipe
import Synchronization
import Testing

@testable import DLPipeLua

/// The job's top-level adds past the memory share: each new URL costs the
/// store one statement, and a repeat still gets its first id back.
@Suite struct TopLevelAddsTests {
    /// A store in memory that counts the statements it is asked for.
    final class CountingStore: PendingRequests {
        let inner = MemoryPendingRequests()
        let inserts = Atomic<Int>(0)
        let lookups = Atomic<Int>(0)

        func insert(_ number: Int, key: String, _ request: DownloadRequest) throws(StateFailure) -> Int? {
            inserts.add(1, ordering: .relaxed)
            return inner.insert(number, key: key, request)
        }

        func number(ofKey key: String) throws(StateFailure) -> Int? {
            lookups.add(1, ordering: .relaxed)
            return inner.number(ofKey: key)
        }

        func request(_ number: Int) throws(StateFailure) -> DownloadRequest? { inner.request(number) }

        func requests(from number: Int, limit: Int) throws(StateFailure) -> [(number: Int, request: DownloadRequest)] {
            inner.requests(from: number, limit: limit)
        }

        func remove(_ number: Int) throws(StateFailure) { inner.remove(number) }
    }

    /// What `ScriptHost.queue` does with one URL: the id of its key, or a new one.
    private func add(_ url: String, to adds: TopLevelAdds) -> Int {
        let request = DownloadRequest(url: url)
        let key = request.deduplicationKey
        return adds.id(ofKey: key) ?? adds.add(key: key, request)
    }

    @Test func aNewURLPastTheMemoryShareCostsOneStatementAndARepeatKeepsItsId() {
        let store = CountingStore()
        let adds = TopLevelAdds(inMemoryLimit: 10, makeStore: { store })
        let ids = (1...500).map { add("http://127.0.0.1:9/f\($0)", to: adds) }
        #expect(ids == Array(1...500))
        #expect(store.inserts.load(ordering: .relaxed) == 490)
        #expect(store.lookups.load(ordering: .relaxed) == 0, "a new URL is found new by its insert alone")
        // Repeats of a kept and of a stored request give their first ids, and no new one.
        #expect(add("http://127.0.0.1:9/f3", to: adds) == 3)
        #expect(add("http://127.0.0.1:9/f400", to: adds) == 400)
        #expect(add("http://127.0.0.1:9/f501", to: adds) == 501)
        #expect(adds.count == 501)
        #expect(Array(adds.requests()).map(\.url) == (1...501).map { "http://127.0.0.1:9/f\($0)" })
    }
}
