import DLPipe
@testable import DLPipeQueue
import Foundation
import TestSupport

/// What a test of `dlpipe run --queue` workers fetching from nginx starts
/// from. The servers are the process's shared ones (`Nginx.shared()`,
/// `PostgresCluster.shared()`, each started once); all the rest is the
/// test's own, so that the suites' tests run side by side: a folder on
/// nginx (`dir`), a job folder, an output directory and a database.
///
/// A suite makes one in its `init` (Swift Testing makes a suite's value
/// anew for each test, so each test gets a fresh fixture).
struct QueueRunFixture {
    let nginx: Nginx
    let dir = Nginx.uniquePath()
    let job: LuaJob
    let out: String
    /// The URL of the test's database, for `--queue`.
    let queue: String
    /// Host names that all reach nginx on 127.0.0.1 (`resolving`): dlpipe
    /// counts hosts by name, so each name has per-host limits of its own.
    let hosts: [String]

    /// `label` starts the names of the output directory ("LABEL-out") and
    /// the database, to tell a suite's apart when kept after a failure.
    init(label: String, hosts: [String]) throws {
        nginx = try Nginx.shared()
        job = try LuaJob()
        out = try TempDir.make(label + "-out")
        queue = try PostgresCluster.shared().freshDatabase(label)
        self.hosts = hosts
    }

    /// The `--resolve` flags that send every name of `hosts` to nginx.
    var resolving: [String] {
        hosts.flatMap { ["--resolve", "\($0):\(nginx.plainPort):127.0.0.1"] }
    }

    /// Writes `size` seeded random bytes as `name` under /slow/ in the
    /// test's folder, where nginx sends them at 100 KiB/s (so that
    /// transfers last and the workers' claims overlap), and returns them
    /// with their plain-http URL on `hosts[hostIndex % hosts.count]`.
    func slowFile(_ name: String, size: Int, seed: UInt64, hostIndex: Int) throws -> (name: String, url: String, bytes: [UInt8]) {
        let path = "/slow" + dir + "/" + name
        let bytes = try nginx.put(path, randomBytes: size, seed: seed)
        return (name, nginx.url(path, host: hosts[hostIndex % hosts.count], tls: false), bytes)
    }
}

/// A suite whose tests use a `QueueRunFixture` (made in its `init`): they
/// name the fixture's parts as their own, `nginx`, `dir`, `queue` and so on.
protocol QueueRunSuite {
    var fixture: QueueRunFixture { get }
}

extension QueueRunSuite {
    var nginx: Nginx { fixture.nginx }
    var dir: String { fixture.dir }
    var job: LuaJob { fixture.job }
    var out: String { fixture.out }
    var queue: String { fixture.queue }
    var hosts: [String] { fixture.hosts }
    var resolving: [String] { fixture.resolving }

    /// How many of the job `name`'s downloads are in each status, as the
    /// queue's table holds them.
    func statuses(_ name: String) throws -> [String: Int64] {
        let rows = try PostgresConnection(PostgresAddress(queue)).execute(
            """
            SELECT d.status, count(*) AS n FROM dlpipe.downloads d JOIN dlpipe.jobs j ON j.id = d.job_id
            WHERE j.name = $1 GROUP BY d.status
            """, [.text(name)]
        ).rows
        var counts: [String: Int64] = [:]
        for row in rows { counts[try row.text("status")] = try row.int("n") }
        return counts
    }
}
