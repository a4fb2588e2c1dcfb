@testable import DLPipe
@testable import DLPipeQueue
import Foundation
import Testing
import TestSupport

/// A shared queue's `dl.store` belongs to the job of `--name`, whatever each
/// worker's job file is called. Keyed by the file's base name (as without a
/// queue), `a/job.lua` and `b/mirror.lua` of one job kept two cursors, and
/// `done`, which runs in whichever worker, read the one of its machine.
@Suite struct QueueStoreNamespaceTests: QueueRunSuite {
    let fixture: QueueRunFixture

    init() throws {
        fixture = try QueueRunFixture(label: "store-ns", hosts: [])
    }

    /// Logs the job's `cursor`, then sets it to `value`.
    private func cursorJob(_ value: String) -> String {
        "dl.log('cursor', tostring(dl.store.get('cursor')))\ndl.store.set('cursor', '\(value)')\n"
    }

    private func worker(_ file: String) async throws -> DLPipeRun {
        try await job.run(file, out: out, ["--queue", queue, "--name", "store-ns", "--settle", "0.2", "--no-hooks"])
    }

    @Test func workersWhoseJobFilesAreNamedApartShareOneStore() async throws {
        try job.write("a/job.lua", cursorJob("from-a"))
        try job.write("b/mirror.lua", cursorJob("from-b"))
        let first = try await worker("a/job.lua")
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.logLines(containing: "cursor\tnil").count == 1, "\(first.stderr)")
        let second = try await worker("b/mirror.lua")
        #expect(second.logLines(containing: "cursor\tfrom-a").count == 1, "another file of the job reads its cursor: \(second.stderr)")
        let third = try await worker("a/job.lua")
        #expect(third.logLines(containing: "cursor\tfrom-b").count == 1, "\(third.stderr)")
    }

    /// Values stored under the job file's name (before the store was the
    /// job's) are still read until the job sets its own.
    @Test func valuesStoredUnderTheJobFilesNameStillRead() async throws {
        let connection = try PostgresConnection(PostgresAddress(queue))
        let id = try SharedQueue.jobID(named: "store-ns", on: connection)
        _ = try connection.execute(
            "INSERT INTO dlpipe.store (job_id, key, value) VALUES ($1, $2, $3)",
            [.int(id), .text("\u{1F}job\u{1F}cursor"), .text("[\"s\",\"under-the-file-name\"]")])
        try job.write("a/job.lua", cursorJob("from-a"))
        let first = try await worker("a/job.lua")
        #expect(first.logLines(containing: "cursor\tunder-the-file-name").count == 1, "\(first.stderr)")
        let second = try await worker("a/job.lua")
        #expect(second.logLines(containing: "cursor\tfrom-a").count == 1, "\(second.stderr)")
    }
}
