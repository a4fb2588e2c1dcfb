import Foundation
import Synchronization
import Testing
import TestSupport

@testable import DLPipe

/// A state that stops taking writes (a full disk): what depended on a commit
/// does not happen, the download fails with the state's reason, and what the
/// state could not take is written once it can.
@Suite struct StateFailureTests {
    /// An in-memory state whose writes and lookups fail while told to.
    final class FlakyState: DownloadState, @unchecked Sendable {
        // @unchecked: every field is behind `lock`.
        private let lock = Mutex<(failWrites: Bool, failReads: Bool, records: [String: DownloadRecord], runsEnded: Int)>(
            (false, false, [:], 0))
        static let reason = "cannot commit the state file (test): database or disk is full"
        /// A state kept elsewhere (a database): a batch of held bodies is
        /// written and synced while its records commit.
        private let remote: Bool

        init(remote: Bool = false) { self.remote = remote }

        var hadRecords: Bool { false }
        var durableBySyncOfOutput: Bool { !remote }
        func failWrites(_ on: Bool) { lock.withLock { $0.failWrites = on } }
        func failReads(_ on: Bool) { lock.withLock { $0.failReads = on } }
        var records: [String: DownloadRecord] { lock.withLock { $0.records } }
        var runsEnded: Int { lock.withLock { $0.runsEnded } }

        func record(key: String) throws(StateFailure) -> DownloadRecord? {
            let (fail, found) = lock.withLock { ($0.failReads, $0.records[key]) }
            if fail { throw StateFailure(message: "cannot read the state file (test): disk I/O error") }
            return found
        }

        func write(_ records: [DownloadRecord], released: [ReleasedFile]) throws(StateFailure) {
            let failed = lock.withLock { state -> Bool in
                if state.failWrites { return true }
                for record in records { state.records[record.key] = record }
                return false
            }
            if failed { throw StateFailure(message: Self.reason) }
        }

        func startRun() throws(StateFailure) -> Int64 { 1 }

        func endRun(_ id: Int64, summary: RunSummary) throws(StateFailure) {
            let failed = lock.withLock { state -> Bool in
                if state.failWrites { return true }
                state.runsEnded += 1
                return false
            }
            if failed { throw StateFailure(message: Self.reason) }
        }

        func value(_ key: String) throws(StateFailure) -> String? { nil }
        func setValue(_ key: String, _ json: String) throws(StateFailure) {}
        func storedBytes(keyPrefix prefix: String) throws(StateFailure) -> Int { 0 }
        func writer(of path: String) throws(StateFailure) -> String? { nil }
        func setWriter(of path: String, to job: String) throws(StateFailure) {}
        func forgetWritten(_ path: String) throws(StateFailure) {}
        func downloadFiles() throws(StateFailure) -> Set<String> { [] }
        func isDownloadFile(_ path: String) throws(StateFailure) -> Bool { false }
        func forgetDownloadFile(_ path: String) throws(StateFailure) {}
    }

    private func engine(_ out: String, _ state: FlakyState, held: HeldBodies) throws -> DownloadEngine {
        var configuration = EngineConfiguration()
        configuration.directory = out
        configuration.heldBodies = held
        configuration.retries = 0
        let root = try #require(FileSystem.realPath(out))
        return try DownloadEngine(configuration: configuration, root: root, hooks: nil, state: state)
    }

    /// Part files and held bodies alike: a body whose record cannot be
    /// committed never appears on disk, under its name or as a part file;
    /// also when the state is a database's, whose commit the batch's writes
    /// and syncfs do not wait for (only its links do).
    @Test(arguments: zip([HeldBodies.off, .auto, .auto], [false, false, true]))
    func aCommitThatFailsStopsTheFileThatDependedOnIt(_ held: HeldBodies, remote: Bool) async throws {
        let server = try FaultServer()
        let out = try TempDir.make("state-fails")
        defer { try? FileManager.default.removeItem(atPath: out) }
        _ = try server.put("small.bin", randomBytes: 3000, seed: 1)
        _ = try server.put("large.bin", randomBytes: 600_000, seed: 2)
        let later = try server.put("later.bin", randomBytes: 600_000, seed: 4)
        let state = FlakyState(remote: remote)
        state.failWrites(true)
        let engine = try engine(out, state, held: held)
        defer { engine.shutdown() }
        for name in ["small.bin", "large.bin"] {
            let id = engine.add(server.url("/files/" + name))
            let outcome = try await within(seconds: 20, "the \(name) download") { await engine.outcome(of: id) }
            guard case .failed(let error)? = outcome else {
                Issue.record("\(held) \(name): \(String(describing: outcome)), expected a failure")
                continue
            }
            #expect(error.kind == .io, "\(held) \(name)")
            #expect(error.message.hasPrefix(FlakyState.reason), "\(held) \(name): \(error.message)")
            #expect(error.message.contains(name) && error.message.contains("was not"), "\(held) \(name): \(error.message)")
        }
        #expect(listing(out).isEmpty, "\(held): nothing on disk without a record: \(listing(out))")
        let (failing, _) = try await within(seconds: 20, "the drain") { await engine.waitUntilDrained() }
        #expect(failing.failed == 2)
        #expect(failing.stateError?.hasPrefix(FlakyState.reason) == true, "the run's end says the state is short")

        // The disk has room again: the records that waited are written with
        // the next commit, and a new download goes through.
        state.failWrites(false)
        let id = engine.add(server.url("/files/later.bin"))
        let outcome = try await within(seconds: 20, "the download after the failure") { await engine.outcome(of: id) }
        guard case .finished(let info)? = outcome else {
            Issue.record("\(held): \(String(describing: outcome)) after the state recovered")
            return
        }
        #expect(sameBytes(info.path, later))
        let (summary, _) = try await within(seconds: 20, "the second drain") { await engine.waitUntilDrained() }
        #expect(summary.stateError == nil, "everything is recorded now")
        #expect(state.runsEnded >= 1)
        let statuses = state.records.values.map { "\($0.url.split(separator: "/").last!): \($0.status)" }.sorted()
        #expect(statuses == ["large.bin: failed", "later.bin: finished", "small.bin: failed"], "\(held): \(statuses)")
    }

    /// A re-run's lookup that fails: the download cannot know which file is
    /// its own, so it fails before any request instead of guessing.
    @Test func aLookupThatFailsEndsTheDownloadBeforeItStarts() async throws {
        let server = try FaultServer()
        let out = try TempDir.make("state-read-fails")
        defer { try? FileManager.default.removeItem(atPath: out) }
        _ = try server.put("a.bin", randomBytes: 1000, seed: 3)
        let state = FlakyState()
        state.failReads(true)
        let engine = try engine(out, state, held: .auto)
        defer { engine.shutdown() }
        let id = engine.add(server.url("/files/a.bin"))
        let outcome = try await within(seconds: 20, "the download") { await engine.outcome(of: id) }
        guard case .failed(let error)? = outcome else {
            Issue.record("\(String(describing: outcome)), expected a failure")
            return
        }
        #expect(error.kind == .io)
        #expect(error.message.contains("disk I/O error") && error.message.contains("was not started"), "\(error.message)")
        #expect(listing(out).isEmpty)
    }
}
