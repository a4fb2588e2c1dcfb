import DLPipe
import Foundation
import Synchronization
import Testing
import TestSupport

/// `DownloadHooks.placed`: told after the `finished` verdict was carried out,
/// with the file's final path; the engine does not drain before its reply,
/// and a download it adds meanwhile is part of the run.
@Suite struct PlacedHookLibraryTests {
    @Test func placedSeesTheMovedFileAndTheRunWaitsForIt() async throws {
        let server = try FaultServer()
        _ = try server.put("a.bin", randomBytes: 5_000)
        let second = try server.put("b.bin", randomBytes: 6_000, seed: 2)
        let out = try TempDir.make("placed-library")
        let placedPaths = Mutex<[String]>([])
        let engineBox = Mutex<DownloadEngine?>(nil)
        let secondURL = server.url("/files/b.bin")
        var hooks = DownloadHooks(finished: { download, _, reply in
            // The first file moves into a folder; the second stays.
            reply(download.name == "a.bin" ? .keep(name: "moved.bin", directory: "sorted") : .keep())
        })
        hooks.placed = { download, result, reply in
            placedPaths.withLock { $0.append(result.path) }
            // Later and from another thread, after adding a download: the
            // engine must still be waiting.
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(200)) {
                if download.name == "moved.bin" { engineBox.withLock { $0 }?.add(secondURL) }
                reply()
            }
        }
        var configuration = EngineConfiguration()
        configuration.directory = out
        let engine = try DownloadEngine(configuration: configuration, hooks: hooks)
        engineBox.withLock { $0 = engine }
        defer { engine.shutdown() }
        engine.add(server.url("/files/a.bin"))
        let (summary, _) = try await within(seconds: 20, "the drain") { await engine.waitUntilDrained() }
        #expect(summary.finished == 2, "the download placed added is part of the run")
        let paths = placedPaths.withLock { $0 }
        #expect(paths.count == 2, "\(paths)")
        #expect(paths.first?.hasSuffix("/sorted/moved.bin") == true, "\(paths)")
        #expect(paths.last?.hasSuffix("/b.bin") == true && sameBytes(out + "/b.bin", second))
    }
}
