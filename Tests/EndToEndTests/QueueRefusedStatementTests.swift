@testable import DLPipe
@testable import DLPipeQueue
import Foundation
import Testing
import TestSupport

/// A worker whose statement the queue refuses (the database answers, but
/// not to this: a trigger here, a revoked privilege or a full disk in
/// life) exits 4, and gives what it holds back at once. It used to leave
/// its claims running and its worker row live until its lease ran out,
/// so that with a long lease the others waited minutes for them.
@Suite struct QueueRefusedStatementTests: QueueRunSuite {
    let fixture: QueueRunFixture

    init() throws {
        fixture = try QueueRunFixture(label: "refused", hosts: [])
    }

    @Test func aWorkerWhoseReportIsRefusedGivesItsClaimsBack() async throws {
        let server = try FaultServer()
        let connection = try PostgresConnection(PostgresAddress(queue))
        try SchemaMigrator().migrate(connection)
        // Every report of a finished download fails; a take-back (to ready) does not.
        try connection.run("""
            CREATE FUNCTION refuse_finished() RETURNS trigger LANGUAGE plpgsql AS
              $$ BEGIN RAISE EXCEPTION 'the test refuses finished downloads'; END $$;
            CREATE TRIGGER refuse_finished BEFORE UPDATE ON dlpipe.downloads
              FOR EACH ROW WHEN (NEW.status = 'finished') EXECUTE FUNCTION refuse_finished();
            """)
        var adds: [String] = []
        for index in 1...6 {
            let name = "r\(index).bin"
            try server.put(name, randomBytes: 2000, seed: UInt64(index))
            // The first is quick; the others still transfer when its report is refused.
            adds.append("dl.add('\(server.url("/files/\(name)" + (index == 1 ? "" : "?delay=5")))')")
        }
        let jobFile = try job.write("job.lua", adds.joined(separator: "\n"))
        let worker = try Subprocess.queueWorker(
            ["run", jobFile, "-d", out, "--queue", queue, "--name", "refused", "--lease", "600", "-j", "6", "--per-host", "6"])
        let ended = await offThePool { worker.finish() }
        #expect(ended.status == 4, "\(ended.stderr)")
        #expect(ended.stderr.contains("the shared queue refused a statement"), "\(ended.stderr)")
        #expect(ended.stderr.contains("its downloads went back to the queue"), "\(ended.stderr)")
        // With a lease of 600 s, nothing but the worker's own give-back makes these so now.
        let workers = try connection.execute("SELECT stopped_at IS NOT NULL AS stopped FROM dlpipe.workers").rows
        #expect(try workers.map { try $0.bool("stopped") } == [true])
        let counts = try statuses("refused")
        #expect(counts["running"] == nil && counts["ready"] == 6, "\(counts)")
        let parts = (try? FileManager.default.subpathsOfDirectory(atPath: out))?.filter { $0.hasSuffix(".part") } ?? []
        #expect(parts.isEmpty, "part files of claims given back: \(parts)")
    }
}
