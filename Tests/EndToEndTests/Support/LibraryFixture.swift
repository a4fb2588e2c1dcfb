import DLPipe
import Foundation
import TestSupport

/// What the library suites (a `DownloadEngine` in the test process) start from:
/// a fault server of the test's own and an empty output directory, and engines
/// that write into it. Made in a suite's `init`, so each test gets a fresh one.
struct LibraryFixture {
    let server: FaultServer
    let out: String

    /// `label` starts the output directory's name (kept after a failure with
    /// `DLPIPE_KEEP_TEMP=1`).
    init(label: String) throws {
        server = try FaultServer()
        out = try TempDir.make(label)
    }

    /// An engine writing into `out`, with progress every `progressInterval`
    /// seconds. `stallTimeout` 600 by default: a transfer a test holds stalled
    /// stays stalled however loaded the machine is (nil: the engine's default).
    func engine(
        concurrency: Int = 8, progressInterval: Double = 0.05, stallTimeout: Double? = 600, hooks: DownloadHooks? = nil
    ) throws -> DownloadEngine {
        var configuration = EngineConfiguration(directory: out, concurrency: concurrency, progressInterval: progressInterval)
        if let stallTimeout { configuration.timeout = stallTimeout }
        return try DownloadEngine(configuration: configuration, hooks: hooks)
    }
}

/// A suite on a `LibraryFixture`: its tests reach the fixture's parts by their
/// own names (`server`, `out`, `engine()`).
protocol LibrarySuite {
    var fixture: LibraryFixture { get }
}

extension LibrarySuite {
    var server: FaultServer { fixture.server }
    var out: String { fixture.out }
}

extension LibrarySuite {
    /// `LibraryFixture.engine`.
    func engine(
        concurrency: Int = 8, progressInterval: Double = 0.05, stallTimeout: Double? = 600, hooks: DownloadHooks? = nil
    ) throws -> DownloadEngine {
        try fixture.engine(concurrency: concurrency, progressInterval: progressInterval, stallTimeout: stallTimeout, hooks: hooks)
    }
}
