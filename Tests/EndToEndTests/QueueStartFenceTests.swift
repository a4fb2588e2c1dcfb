import Foundation
import Synchronization
import Testing
import TestSupport

@testable import DLPipe

/// A shared queue's worker starts no request while its lease is not sure
/// (issue #36): the engine asks `QueueParticipant.mayStart` before each request,
/// and a request refused waits in its slot and asks again.
@Suite struct QueueStartFenceTests {
    /// The test's lease: whether it is sure, and how often the engine asked.
    private final class Lease: Sendable {
        let sure = Mutex(false)
        let asked = Atomic<Int>(0)
    }

    private func engine(_ out: String, lease: Lease) throws -> DownloadEngine {
        let folder = ".dlpipe/queue/1"
        try FileManager.default.createDirectory(atPath: out + "/" + folder, withIntermediateDirectories: true)
        var configuration = EngineConfiguration()
        configuration.directory = out
        configuration.statePath = out + "/.dlpipe/state.db"
        configuration.retries = 0
        let queue = TestQueue(
            folder: folder, worker: 7, mayPlace: { lease.sure.withLock { $0 } },
            mayStart: {
                lease.asked.add(1, ordering: .relaxed)
                return lease.sure.withLock { $0 }
            })
        configuration.queue = queue
        let engine = try DownloadEngine(configuration: configuration)
        queue.serve(engine)
        return engine
    }

    @Test func noRequestStartsUntilTheLeaseIsSure() async throws {
        let server = try FaultServer()
        let out = try TempDir.make("queue-start-fence")
        let lease = Lease()
        var files: [String: [UInt8]] = [:]
        for index in 0..<4 {
            files["r\(index).bin"] = try server.put("r\(index).bin", randomBytes: 3000 + index, seed: UInt64(index + 1))
        }
        let engine = try engine(out, lease: lease)
        defer { engine.shutdown() }
        let ids = files.keys.sorted().map { ($0, engine.add(server.url("/files/" + $0))) }

        // Every request asked, was refused, and asked again (each waits in
        // its slot): and none reached the server meanwhile.
        let count = files.count
        try await within(seconds: 20, "every request asking the fence twice") {
            while lease.asked.load(ordering: .relaxed) < 2 * count { try? await Task.sleep(nanoseconds: 20_000_000) }
        }
        #expect(try server.requests(matching: "/files/").isEmpty, "a request went out under an unsure lease")

        lease.sure.withLock { $0 = true }
        for (name, id) in ids {
            let outcome = try await within(seconds: 20, "the outcome of \(name)") { await engine.outcome(of: id) }
            guard case .finished(let info)? = outcome else {
                Issue.record("\(name): \(String(describing: outcome)), expected the file")
                continue
            }
            #expect(info.path == out + "/" + name && sameBytes(info.path, files[name]!), "\(name)")
        }
        let served = try server.requests(matching: "/files/").compactMap { $0["path"] as? String }
        #expect(served.sorted() == files.keys.sorted().map { "/files/" + $0 }, "each requested once: \(served)")
    }
}
