import Foundation
import TestSupport

/// What most end-to-end suites start from: a fault server of the test's own,
/// a job folder (`LuaJob`) and an empty output directory. A suite makes one
/// in its `init` (Swift Testing makes a suite's value anew for each test, so
/// each test gets a fresh one) and puts its own files on the server after.
struct ServerJobFixture {
    let server: FaultServer
    let job: LuaJob
    let out: String

    /// `label` starts the output directory's name, to tell a suite's apart
    /// when kept after a failure (`DLPIPE_KEEP_TEMP=1`).
    init(label: String) throws {
        server = try FaultServer()
        job = try LuaJob()
        out = try TempDir.make(label)
    }
}

/// A suite on a `ServerJobFixture`: its tests reach the fixture's parts by
/// their own names (`server`, `job`, `out`).
protocol ServerJobSuite {
    var fixture: ServerJobFixture { get }
}

extension ServerJobSuite {
    var server: FaultServer { fixture.server }
    var job: LuaJob { fixture.job }
    var out: String { fixture.out }
}
