import DLPipe
import Foundation
import Testing
import TestSupport

/// dlpipe reads each folder's names once and guesses free names from that. A
/// file that another program creates afterwards must still never be replaced
/// or truncated: the download takes the next free name.
@Suite struct NameRaceTests {
    @Test func filesCreatedAfterTheNamesWereReadAreNeverReplaced() async throws {
        let server = try FaultServer()
        let out = try TempDir.make("race")
        let first = try server.put("first.bin", randomBytes: 100, seed: 1)
        let large = try server.put("large.bin", randomBytes: 400_000, seed: 2)  // past the 256 KiB held in memory
        let small = try server.put("small.bin", randomBytes: 5000, seed: 3)
        let other = try server.put("other.bin", randomBytes: 300_000, seed: 4)
        var configuration = EngineConfiguration()
        configuration.directory = out
        configuration.statePath = out + "/.dlpipe/state.db"
        let engine = try DownloadEngine(configuration: configuration)
        // The first download makes the engine read the folder's names.
        let firstID = engine.add(server.url("/files/first.bin"))
        #expect(await engine.outcome(of: firstID).map { "\($0)" }?.hasPrefix("finished") == true)
        // Then another program creates files under the names the next ones want.
        let foreign = Array("another program's bytes".utf8)
        for name in ["large.bin.part", "small.bin", "other.bin"] {
            try TestFiles.create(out + "/" + name, Data(foreign))
        }
        var paths: [String: String] = [:]
        for name in ["large.bin", "small.bin", "other.bin"] {
            let id = engine.add(server.url("/files/" + name))
            if case .finished(let info)? = await engine.outcome(of: id) { paths[name] = info.path }
        }
        engine.shutdown()
        for name in ["large.bin.part", "small.bin", "other.bin"] {
            #expect(sameBytes(out + "/" + name, foreign), "\(name) is another program's and stays as it was")
        }
        #expect(paths["large.bin"] == out + "/large.1.bin")
        #expect(paths["small.bin"] == out + "/small.1.bin")
        #expect(paths["other.bin"] == out + "/other.1.bin")
        #expect(sameBytes(out + "/first.bin", first))
        #expect(sameBytes(out + "/large.1.bin", large))
        #expect(sameBytes(out + "/small.1.bin", small))
        #expect(sameBytes(out + "/other.1.bin", other))
        #expect(listing(out).filter { $0.hasSuffix(".part") } == ["large.bin.part"])
    }

    /// A name numbered because its first choice was taken (`x.1.bin`) that is
    /// then taken too, by another worker of a shared queue or another program,
    /// goes on to the next free variant of the name the download wanted
    /// (`x.2.bin`), never to a variant of the numbered one (`x.1.1.bin`): the
    /// race three workers writing one folder run into. All three ways to a
    /// name: a held body's link, a part file's rename, a part file's O_EXCL open.
    @Test func aNumberedNameTakenMeanwhileGoesOnToTheNextNumber() async throws {
        let server = try FaultServer()
        let out = try TempDir.make("race-numbered")
        let first = try server.put("first.bin", randomBytes: 100, seed: 1)
        let small = try server.put("small.bin", randomBytes: 5000, seed: 2)  // held in memory, linked
        let large = try server.put("large.bin", randomBytes: 400_000, seed: 3)  // a part file, renamed
        let opened = try server.put("opened.bin", randomBytes: 400_000, seed: 4)  // its part file's name is taken
        let foreign = Array("another worker's bytes".utf8)
        // The names the downloads want are taken before the folder is read...
        for name in ["small.bin", "large.bin", "opened.bin"] {
            try TestFiles.create(out + "/" + name, Data(foreign))
        }
        var configuration = EngineConfiguration()
        configuration.directory = out
        configuration.statePath = out + "/.dlpipe/state.db"
        let engine = try DownloadEngine(configuration: configuration)
        let firstID = engine.add(server.url("/files/first.bin"))
        #expect(await engine.outcome(of: firstID).map { "\($0)" }?.hasPrefix("finished") == true)
        // ...and their first numbered variants after it was read.
        for name in ["small.1.bin", "large.1.bin", "opened.1.bin.part"] {
            try TestFiles.create(out + "/" + name, Data(foreign))
        }
        var paths: [String: String] = [:]
        for name in ["small.bin", "large.bin", "opened.bin"] {
            let id = engine.add(server.url("/files/" + name))
            if case .finished(let info)? = await engine.outcome(of: id) { paths[name] = info.path }
        }
        engine.shutdown()
        #expect(paths["small.bin"] == out + "/small.2.bin")
        #expect(paths["large.bin"] == out + "/large.2.bin")
        #expect(paths["opened.bin"] == out + "/opened.2.bin")
        #expect(sameBytes(out + "/first.bin", first))
        #expect(sameBytes(out + "/small.2.bin", small))
        #expect(sameBytes(out + "/large.2.bin", large))
        #expect(sameBytes(out + "/opened.2.bin", opened))
        for name in ["small.bin", "small.1.bin", "large.bin", "large.1.bin", "opened.bin", "opened.1.bin.part"] {
            #expect(sameBytes(out + "/" + name, foreign), "\(name) is another worker's and stays as it was")
        }
        #expect(!listing(out).contains { $0.contains(".1.1.") }, "\(listing(out))")
    }
}
