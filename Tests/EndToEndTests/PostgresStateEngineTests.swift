import Foundation
import Testing
import TestSupport

@testable import DLPipe
@testable import DLPipeQueue

/// The engine on the shared job's state in PostgreSQL (what `run --queue`
/// gives each worker): a file downloaded by one engine is asked for
/// conditionally by the next engine of the job, a 304, and kept; the point
/// of keeping the state in the database.
@Suite struct PostgresStateEngineTests {
    private func engine(_ out: String, _ state: PostgresDownloadState) throws -> DownloadEngine {
        var configuration = EngineConfiguration()
        configuration.directory = out
        configuration.retries = 0
        let root = try #require(FileSystem.realPath(out))
        return try DownloadEngine(configuration: configuration, root: root, hooks: nil, state: state)
    }

    @Test func aSecondWorkersEngineAsksConditionallyAndKeepsTheFile() async throws {
        let server = try FaultServer()
        let out = try TempDir.make("pg-state-engine")
        let bytes = try server.put("a.bin", randomBytes: 70_000, seed: 11)
        let address = try PostgresAddress(try PostgresCluster.shared().freshDatabase("engine"))
        let connection = try PostgresConnection(address)
        try SchemaMigrator().migrate(connection)
        let job = try SharedQueue.open(job: "mirror", limits: JobLimits(perHost: 2), on: connection).job

        let first = try engine(out, try PostgresDownloadState(address: address, job: job))
        let id = first.add(server.url("/files/a.bin"))
        let outcome = try await within(seconds: 20, "the first download") { await first.outcome(of: id) }
        guard case .finished(let info)? = outcome else {
            Issue.record("\(String(describing: outcome)), expected the file")
            return
        }
        #expect(!info.unchanged && sameBytes(info.path, bytes))
        let (summary, _) = try await within(seconds: 20, "the first drain") { await first.waitUntilDrained() }
        #expect(summary.finished == 1 && summary.stateError == nil)
        first.shutdown()

        // Another worker's engine, with a state object of its own on the same job.
        let secondState = try PostgresDownloadState(address: address, job: job)
        #expect(secondState.hadRecords)
        let second = try engine(out, secondState)
        defer { second.shutdown() }
        let again = second.add(server.url("/files/a.bin"))
        let kept = try await within(seconds: 20, "the second download") { await second.outcome(of: again) }
        guard case .finished(let keptInfo)? = kept else {
            Issue.record("\(String(describing: kept)), expected the file kept")
            return
        }
        #expect(keptInfo.unchanged, "a 304: the file is current")
        #expect(keptInfo.path == info.path && sameBytes(keptInfo.path, bytes))
        let (secondSummary, _) = try await within(seconds: 20, "the second drain") { await second.waitUntilDrained() }
        #expect(secondSummary.unchanged == 1 && secondSummary.finished == 0 && secondSummary.bytes == 0)
        #expect(listing(out) == ["a.bin"], "no copy, no part file")

        let requests = try server.requests(matching: "/files/a.bin")
        #expect(requests.count == 2)
        let headers = requests.last?["headers"] as? [String: String] ?? [:]
        #expect(headers["if-none-match"] != nil, "the second request is conditional: \(headers)")
        // The record the second engine left: still the file's, as the next run needs it.
        let record = try #require(try secondState.record(key: DownloadRequest(url: server.url("/files/a.bin")).deduplicationKey))
        #expect(record.status == .finished && record.placed?.path == "a.bin" && record.etag != nil)
    }
}
