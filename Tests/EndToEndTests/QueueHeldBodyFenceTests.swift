import Foundation
import Synchronization
import Testing
import TestSupport

@testable import DLPipe

/// A shared queue's worker holds small bodies in memory, as one machine does,
/// and names them only while its lease surely holds: a held body whose link
/// comes while the lease is not sure goes to a part file, whose rename waits
/// for the lease like any other (docs/scale-out.md, the guarantees).
@Suite struct QueueHeldBodyFenceTests {
    /// Whether the worker's lease is sure, as the test says.
    private final class Lease: Sendable {
        let sure: Mutex<Bool>
        init(sure: Bool) { self.sure = Mutex(sure) }
    }

    /// An engine as a queue worker runs it (its part files in the job's
    /// folder, the fence asked before every name), on a state of its own.
    private func engine(_ out: String, lease: Lease) throws -> DownloadEngine {
        let folder = ".dlpipe/queue/1"
        try FileManager.default.createDirectory(atPath: out + "/" + folder, withIntermediateDirectories: true)
        var configuration = EngineConfiguration()
        configuration.directory = out
        configuration.statePath = out + "/.dlpipe/state.db"
        configuration.retries = 0
        let queue = TestQueue(folder: folder, worker: 7, mayPlace: { lease.sure.withLock { $0 } })
        configuration.queue = queue
        let engine = try DownloadEngine(configuration: configuration)
        queue.serve(engine)
        return engine
    }

    @Test func aHeldBodyIsNamedOnlyOnceTheLeaseIsSure() async throws {
        let server = try FaultServer()
        let out = try TempDir.make("queue-held")
        let lease = Lease(sure: false)
        var files: [String: [UInt8]] = [:]
        for index in 0..<6 {
            files["s\(index).bin"] = try server.put("s\(index).bin", randomBytes: 2000 + index, seed: UInt64(index))
        }
        let engine = try engine(out, lease: lease)
        defer { engine.shutdown() }
        let ids = files.keys.sorted().map { ($0, engine.add(server.url("/files/" + $0))) }

        // While the lease is not sure every body waits, whole, in the
        // worker's part files; nothing has a final name.
        let parts = out + "/.dlpipe/queue/1"
        let count = files.count
        try await within(seconds: 20, "every body in a part file") {
            while listing(parts).count < count { try? await Task.sleep(nanoseconds: 20_000_000) }
        }
        #expect(listing(parts).allSatisfy { $0.hasPrefix("w7-") && $0.hasSuffix(".part") })
        #expect(engine.inbox.heldBodiesFenced.load(ordering: .relaxed) > 0, "bodies were held, and the fence stopped their links")
        #expect(listing(out).isEmpty, "nothing placed under an unsure lease (`listing` leaves out .dlpipe)")

        lease.sure.withLock { $0 = true }
        for (name, id) in ids {
            let outcome = try await within(seconds: 20, "the outcome of \(name)") { await engine.outcome(of: id) }
            guard case .finished(let info)? = outcome else {
                Issue.record("\(name): \(String(describing: outcome)), expected the file")
                continue
            }
            #expect(info.path == out + "/" + name && sameBytes(info.path, files[name]!), "\(name)")
        }
        #expect(listing(parts).isEmpty, "every part file renamed into place")
        #expect(listing(out) == files.keys.sorted(), "no numbered copies")
    }

    @Test func aHeldBodyUnderASureLeaseTakesNoPartFile() async throws {
        let server = try FaultServer()
        let out = try TempDir.make("queue-held-sure")
        let lease = Lease(sure: true)
        let data = try server.put("one.bin", randomBytes: 5000, seed: 3)
        let engine = try engine(out, lease: lease)
        defer { engine.shutdown() }
        let id = engine.add(server.url("/files/one.bin"))
        let outcome = try await within(seconds: 20, "the outcome") { await engine.outcome(of: id) }
        guard case .finished(let info)? = outcome else {
            Issue.record("\(String(describing: outcome)), expected the file")
            return
        }
        #expect(sameBytes(info.path, data))
        #expect(engine.inbox.heldBodiesFenced.load(ordering: .relaxed) == 0)
        #expect(listing(out + "/.dlpipe/queue/1").isEmpty)
    }
}
