import Foundation
import Synchronization
import Testing

@testable import DLPipe

/// Small bodies that arrive whole in memory skip the part file: written as
/// unnamed files and linked after the batch's syncfs. The same downloads must
/// come out the same on each of the three paths: held, part files only, and
/// held with every link refused (a file system without unnamed files found
/// at run time, which falls back to part files).
@Suite struct HeldBodyTests {
    @Test(arguments: [HeldBodies.auto, .off, .linksRefused])
    func smallFilesArriveWholeOnEveryPath(_ mode: HeldBodies) async throws {
        let server = try FaultServer()
        let out = try TempDir.make("held")
        var files: [String: [UInt8]] = [:]
        for index in 0..<40 {
            // Sizes around the 256 KiB that is held in memory, and empty ones.
            let size = [0, 1, 4096, 16_384, 200_000, 262_144, 300_000][index % 7]
            files["f\(index).bin"] = try server.put("f\(index).bin", randomBytes: size, seed: UInt64(index))
        }
        try Data("not ours".utf8).write(to: URL(fileURLWithPath: out + "/f3.bin"))
        var configuration = EngineConfiguration()
        configuration.directory = out
        configuration.statePath = out + "/.dlpipe/state.db"
        configuration.concurrency = 8
        configuration.perHost = 8
        configuration.heldBodies = mode
        let engine = try DownloadEngine(configuration: configuration)
        var finished: [String: FinishedInfo] = [:]
        let ids = files.keys.sorted().map { ($0, engine.add(server.url("/files/" + $0))) }
        for (name, id) in ids {
            if case .finished(let info)? = await engine.outcome(of: id) { finished[name] = info }
        }
        let (summary, _) = await engine.waitUntilDrained()
        engine.shutdown()
        #expect(summary.finished == files.count, "\(mode)")
        for (name, data) in files {
            let path = name == "f3.bin" ? out + "/f3.1.bin" : out + "/" + name
            #expect(finished[name]?.path == path, "\(mode): \(name)")
            #expect(sameBytes(path, data), "\(mode): \(name)")
        }
        #expect(sameBytes(out + "/f3.bin", Array("not ours".utf8)), "\(mode): a file dlpipe did not write stays")
        #expect(!listing(out).contains { $0.hasSuffix(".part") }, "\(mode)")
        let store = try StateStore(path: out + "/.dlpipe/state.db")
        let records = try store.records()
        #expect(records.count == files.count && records.allSatisfy { $0.status == .finished }, "\(mode)")
        #expect(Set(records.compactMap(\.target)).contains("f3.1.bin"), "\(mode)")
    }
}

/// The same for a user without privileges, as most users run it: no
/// CAP_DAC_READ_SEARCH, so linking unnamed files may take the /proc path, and
/// nothing of root's reach helps. Runs when the tests run as root (the user is
/// switched with setpriv) and that user can run the binary.
@Suite struct UnprivilegedTests {
    static let nobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    static let available: Bool = {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: nobody[0]),
            let probe = try? Subprocess(nobody[0], Array(nobody.dropFirst()) + [Paths.binary, "--version"])
        else { return false }
        return probe.finish().status == 0
    }()

    @Test(.enabled(if: available, "needs root, setpriv, and a binary that user 65534 can run"))
    func smallAndLargeFilesArriveWholeForAnUnprivilegedUser() async throws {
        let server = try FaultServer()
        let out = try TempDir.make("nobody")
        chmod(out, 0o777)
        var files: [String: [UInt8]] = [:]
        for index in 0..<30 {
            files["n\(index).bin"] = try server.put("n\(index).bin", randomBytes: index == 0 ? 400_000 : 3000 + index, seed: UInt64(index))
        }
        let urls = files.keys.sorted().map { server.url("/files/" + $0) }
        let run = try await DLPipeRun.run(["get"] + urls + ["-d", out + "/dl", "-j", "8", "--json"], under: Self.nobody, within: 60)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(listing(out + "/dl") == files.keys.sorted())
        for (name, data) in files {
            #expect(sameBytes(out + "/dl/" + name, data), "\(name)")
            let owner = try FileManager.default.attributesOfItem(atPath: out + "/dl/" + name)[.ownerAccountID] as? Int
            #expect(owner == 65534, "\(name) belongs to the user who ran dlpipe")
        }
        #expect(run.events("finished").count == files.count)
    }
}

/// Pause and cancel right after each small file's response, when its body is
/// usually already whole in memory and waiting for its batch: a held body is
/// taken back (paused: it starts again when resumed; cancelled: nothing on
/// disk), or, once linked under its name, the download just finishes.
@Suite struct HeldBodyControlTests {
    @Test func pauseAndCancelRightAfterTheResponseLeaveNoTrace() async throws {
        let server = try FaultServer()
        let out = try TempDir.make("held-control")
        var files: [String: [UInt8]] = [:]
        for index in 0..<40 {
            files["c\(index).bin"] = try server.put("c\(index).bin", randomBytes: 2000 + index, seed: UInt64(index))
        }
        var configuration = EngineConfiguration()
        configuration.directory = out
        configuration.statePath = out + "/.dlpipe/state.db"
        configuration.concurrency = 8
        configuration.perHost = 8
        let engine = try DownloadEngine(configuration: configuration)
        let paused = Mutex<Set<DownloadID>>([])
        let asked = Mutex<Set<DownloadID>>([])
        // Even ids are paused at their first response (and resumed at once when
        // paused), odd ids cancelled; the observer runs on the engine thread,
        // so each command lands in the engine's next turn.
        engine.observe { event in
            switch event {
            case .response(let d, _):
                guard asked.withLock({ $0.insert(d.id).inserted }) else { break }
                if d.id.rawValue % 2 == 0 { engine.pause(d.id) } else { engine.cancel(d.id) }
            case .paused(let d):
                paused.withLock { _ = $0.insert(d.id) }
                engine.resume(d.id)
            default: break
            }
        }
        let ids = files.keys.sorted().map { ($0, engine.add(server.url("/files/" + $0))) }
        var finished = 0, cancelled = 0
        for (name, id) in ids {
            switch await engine.outcome(of: id) {
            case .finished(let info)?:
                finished += 1
                #expect(sameBytes(info.path, files[name]!), "\(name)")
                #expect(info.path == out + "/" + name)
            case .cancelled?:
                cancelled += 1
                #expect(!FileManager.default.fileExists(atPath: out + "/" + name), "a cancelled \(name) leaves nothing")
            case let other:
                Issue.record("\(name): \(String(describing: other))")
            }
        }
        _ = await engine.waitUntilDrained()
        // The stops that land after a body was held (the usual case for 2 KB
        // on loopback: the whole body comes with its head) take it back from
        // the syncfs queue before its link.
        let withdrawn = engine.inbox.heldBodiesWithdrawn.load(ordering: .relaxed)
        engine.shutdown()
        #expect(withdrawn > 0, "no stop took a held body back: the withdrawal path did not run")
        #expect(finished + cancelled == files.count)
        #expect(finished >= files.count / 2, "every paused download finishes after its resume")
        #expect(!paused.withLock { $0.isEmpty }, "some pauses came in time")
        #expect(!listing(out).contains { $0.hasSuffix(".part") }, "no part file is left")
        for name in listing(out) { #expect(files[name] != nil, "\(name) is a file of the job") }
    }
}
