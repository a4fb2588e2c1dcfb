import Foundation
import Testing
import TestSupport

@testable import DLPipe

/// The stores of queued requests (`PendingRequests`): the SQLite file behaves
/// as the in-memory reference does, and the registry puts requests there
/// only past its memory share and never with credentials.
@Suite struct PendingRequestsTests {
    static func stores() throws -> [any PendingRequests] {
        let folder = try TempDir.make("pending")
        return [MemoryPendingRequests(), try SQLitePendingRequests(besideState: folder + "/state.db")]
    }

    @Test func aRepeatedKeyGivesTheFirstNumberBackAndStoresNothing() throws {
        for store in try Self.stores() {
            #expect(try store.insert(1, key: "k1", DownloadRequest(url: "http://h/1")) == nil)
            #expect(try store.insert(2, key: "k1", DownloadRequest(url: "http://h/other")) == 1)
            #expect(try store.number(ofKey: "k1") == 1)
            #expect(try store.request(2) == nil)
            #expect(try store.request(1)?.url == "http://h/1")
        }
    }

    @Test func everyFieldComesBackAsStored() throws {
        var request = DownloadRequest(
            url: "http://h/a?b=c", name: "n.txt", directory: "d/e", sha256: String(repeating: "a", count: 64),
            priority: -7, parent: DownloadID(41, engine: 3), timeout: 2.5, maxSize: 1234, into: .memory)
        request.method = "HEAD"
        request.metaJSON = "{\"x\":1}"
        for store in try Self.stores() {
            #expect(try store.insert(5, key: request.deduplicationKey, request) == nil)
            #expect(try store.request(5) == request)
            let plain = DownloadRequest(url: "http://h/plain")
            #expect(try store.insert(6, key: plain.deduplicationKey, plain) == nil)
            #expect(try store.request(6) == plain)
        }
    }

    @Test func pagesComeInOrderAndARemovedKeyIsFree() throws {
        for store in try Self.stores() {
            for number in [3, 1, 2, 5, 4] {
                _ = try store.insert(number, key: "k\(number)", DownloadRequest(url: "http://h/\(number)"))
            }
            #expect(try store.requests(from: 2, limit: 3).map(\.number) == [2, 3, 4])
            try store.remove(3)
            #expect(try store.requests(from: 2, limit: 3).map(\.number) == [2, 4, 5])
            #expect(try store.number(ofKey: "k3") == nil)
            #expect(try store.insert(9, key: "k3", DownloadRequest(url: "http://h/3")) == nil)
        }
    }

    @Test func theScratchFileLeavesNothingBesideTheState() throws {
        let folder = try TempDir.make("pending")
        let store = try SQLitePendingRequests(besideState: folder + "/state.db")
        for number in 1...10_000 {
            _ = try store.insert(number, key: "k\(number)", DownloadRequest(url: "http://h/\(number)"))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == [])
        #expect(try store.request(10_000)?.url == "http://h/10000")
    }

    @Test func aStoreThatCannotBeMadeSaysWhere() {
        #expect(throws: StateFailure.self) { try SQLitePendingRequests(besideState: "/nonexistent-folder/x/state.db") }
    }

    @Test func theRegistryStoresPastItsShareAndFindsRepeatsThere() throws {
        let store = MemoryPendingRequests()
        let registry = DownloadRegistry(engine: 1, wholeRun: false, inMemoryLimit: 2, store: { store })
        var admitted: [AdmittedRequest] = []
        let urls = (1...5).map { "http://h/\($0)" } + ["http://user:pw@h/6"]
        let ids = registry.admit(urls.map { DownloadRequest(url: $0) }) { _, new in admitted += new }
        #expect(ids.map(\.rawValue) == [1, 2, 3, 4, 5, 6])
        #expect(admitted.map(\.stored) == [false, false, true, true, true, false], "credentials stay in memory")
        #expect(store.request(6) == nil)
        let again = registry.admit(["http://h/4", "http://h/1", "http://user:pw@h/6"].map { DownloadRequest(url: $0) }) { _, new in
            #expect(new.isEmpty)
        }
        #expect(again.map(\.rawValue) == [4, 1, 6])
        #expect(try registry.storedRequest(ids[3])?.url == "http://h/4")
        // An ended stored download frees its key: the same request is a new download.
        registry.ended(ids[3], DownloadRequest(url: "http://h/4"))
        #expect(store.number(ofKey: DownloadRequest(url: "http://h/4").deduplicationKey) == nil)
        #expect(registry.admit([DownloadRequest(url: "http://h/4")]) { _, _ in }.map(\.rawValue) == [7])
    }

    @Test func theCommandLinesRegistryKeepsStoredKeysForTheWholeRun() {
        let store = MemoryPendingRequests()
        let registry = DownloadRegistry(engine: 1, wholeRun: true, inMemoryLimit: 1, store: { store })
        let ids = registry.admit((1...3).map { DownloadRequest(url: "http://h/\($0)") }) { _, _ in }
        registry.ended(ids[2], DownloadRequest(url: "http://h/3"))
        #expect(registry.admit([DownloadRequest(url: "http://h/3")]) { _, _ in } == [ids[2]])
    }

    @Test func aLongListCrossesInPiecesInOrder() {
        let registry = DownloadRegistry(engine: 1, inMemoryLimit: 10, store: { MemoryPendingRequests() })
        var pieces: [[Int]] = []
        let count = DownloadRegistry.chunk * 2 + 5
        _ = registry.admit((1...count).map { DownloadRequest(url: "http://h/\($0)") }) { _, new in
            pieces.append(new.map(\.id.rawValue))
        }
        #expect(pieces.map(\.count) == [DownloadRegistry.chunk, DownloadRegistry.chunk, 5])
        #expect(pieces.flatMap { $0 } == Array(1...count))
    }

    @Test func aStoreThatCannotBeMadeKeepsEverythingInMemory() {
        let registry = DownloadRegistry(engine: 1, inMemoryLimit: 1, store: { () throws(StateFailure) -> any PendingRequests in
            throw StateFailure(message: "no room")
        })
        var stored: [Bool] = []
        let ids = registry.admit(["http://h/1", "http://h/2", "http://h/1"].map { DownloadRequest(url: $0) }) { _, new in
            stored += new.map(\.stored)
        }
        #expect(stored == [false, false])
        #expect(ids.map(\.rawValue) == [1, 2, 1])
    }

    @Test func theUserPartIsFoundAsTheStateFindsIt() {
        for url in ["http://u:p@h/x", "https://u@h", "http://h/x@y", "http://h?a@b", "http://h#@", "h@x", "http://h:80/a", "http://a@b@h/"] {
            #expect(PendingRule.hasUserPart(url) == (StoredCredentials.userPart(of: url[...]) != nil), "\(url)")
        }
    }

    @Test func numberSetsCountAndListInOrder() {
        var set = NumberSet()
        for number in [700, 3, 64, 63, 3] { set.insert(number) }
        #expect(set.count == 4)
        #expect(set.sorted == [3, 63, 64, 700])
        #expect(set.remove(64) && !set.remove(64))
        #expect(!set.contains(64) && set.contains(700) && !set.contains(100_000))
    }
}
