import Foundation
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
            #expect(bytes(at: path) == data, "\(mode): \(name)")
        }
        #expect(bytes(at: out + "/f3.bin") == Array("not ours".utf8), "\(mode): a file dlpipe did not write stays")
        #expect(!listing(out).contains { $0.hasSuffix(".part") }, "\(mode)")
        let store = try StateStore(path: out + "/.dlpipe/state.db")
        let records = store.records()
        #expect(records.count == files.count && records.allSatisfy { $0.status == .finished }, "\(mode)")
        #expect(Set(records.compactMap(\.target)).contains("f3.1.bin"), "\(mode)")
    }
}
