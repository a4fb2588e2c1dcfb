import DLPipe
import DLPipeQueue
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL cluster for the tests, started once per test
/// process (`shared()`) and shared by its suites; each test takes a database
/// of its own (`freshDatabase`), so tests stay apart.
///
/// `initdb` and `pg_ctl` come from `/usr/lib/postgresql/*/bin` (the newest
/// version there; scripts/setup installs it). The server runs as the
/// `postgres` system user when the tests run as root (it refuses root), else
/// as the test user; it listens only on a unix socket in the cluster's own
/// temporary directory (`listen_addresses = ''`), trusts that socket, and
/// runs with `fsync = off`: nothing here needs to survive a power cut.
/// At exit it is stopped by its PID (an immediate shutdown) and its
/// directory removed; a watchdog shell does the same if the test process
/// dies without running its exit handlers.
public final class PostgresCluster: Sendable {
    /// The directory of the data folder, the log and the socket.
    public let folder: String
    /// The superuser that initdb made; the tests connect as it.
    public static let user = "dlpipe"
    /// The postmaster's PID (from postmaster.pid); a restart changes it.
    public var pid: pid_t { current.withLock { $0 } }
    private let current: Mutex<pid_t>
    private let binaries: String
    private let admin: Mutex<PostgresConnection>
    private let runAs: [String]
    /// Whether this is the shared cluster (stopped at exit) or a test's own (stopped by `stop`).
    private let isShared: Bool

    /// The shared cluster, started on first use.
    public static func shared() throws -> PostgresCluster { try started.get() }
    private static let started = Result { try PostgresCluster(shared: true) }

    /// A cluster of one test's own, for what would disturb the others (a
    /// restart): the test stops it with `stop()`; a watchdog shell stops it
    /// if the test process dies first.
    public static func ownCluster() throws -> PostgresCluster { try PostgresCluster(shared: false) }

    private init(shared: Bool) throws {
        isShared = shared
        binaries = try PostgresCluster.findBinaries()
        folder = try TempDir.make("pg")
        let runAs = getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []
        self.runAs = runAs
        if getuid() == 0 {
            // The server's user must own its folder; the test process (root) still reads it.
            guard let account = getpwnam("postgres") else {
                throw ToolRun.Failed(description: "no postgres system user (scripts/setup installs postgresql, which makes it)")
            }
            guard chown(folder, account.pointee.pw_uid, account.pointee.pw_gid) == 0 else {
                throw ToolRun.Failed(description: "chown \(folder): errno \(errno)")
            }
        }
        let data = folder + "/data"
        try PostgresCluster.tool(runAs, binaries + "/initdb", [
            "-D", data, "-U", PostgresCluster.user, "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync",
        ])
        let settings = """

            # dlpipe tests: a unix socket in the cluster's folder only, speed over durability.
            listen_addresses = ''
            unix_socket_directories = '\(folder)'
            fsync = off
            synchronous_commit = off
            full_page_writes = off
            # Each queue worker holds six or so connections; a full run's queue
            # suites start many workers at once.
            max_connections = 500

            """
        guard let file = FileHandle(forWritingAtPath: data + "/postgresql.conf") else {
            throw ToolRun.Failed(description: "cannot open \(data)/postgresql.conf")
        }
        file.seekToEndOfFile()
        file.write(Data(settings.utf8))
        file.closeFile()
        do {
            try PostgresCluster.tool(runAs, binaries + "/pg_ctl", ["-D", data, "-l", folder + "/server.log", "-w", "-t", "60", "start"])
        } catch {
            // pg_ctl only says it stopped waiting; the server's log says why.
            let log = (try? String(contentsOfFile: folder + "/server.log", encoding: .utf8)) ?? "(no server.log)"
            throw ToolRun.Failed(description: "\(error); server.log: \(log)")
        }
        let pidLine = (try? String(contentsOfFile: data + "/postmaster.pid", encoding: .utf8))?.split(separator: "\n").first
        guard let pidLine, let pid = pid_t(pidLine) else {
            throw ToolRun.Failed(description: "pg_ctl started no server: \((try? String(contentsOfFile: folder + "/server.log", encoding: .utf8)) ?? "")")
        }
        current = Mutex(pid)
        if shared {
            PostgresCluster.stopAtExit(pid: pid, folder: folder)
        } else {
            PostgresCluster.watch(pid: pid, folder: folder, keep: true)
        }
        admin = Mutex(try PostgresConnection(PostgresAddress(PostgresCluster.url(folder: folder, database: "postgres"))))
    }

    /// A URL for `database` over the cluster's socket.
    public func url(database: String) -> String { PostgresCluster.url(folder: folder, database: database) }

    private static func url(folder: String, database: String) -> String {
        "postgresql://\(user)@/\(database)?host=\(folder)"
    }

    /// A new, empty database for one test; returns its URL.
    public func freshDatabase(_ label: String = "t") throws -> String {
        let name = "\(label)_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: ""))"
        try admin.withLock { connection in
            try connection.run("CREATE DATABASE \(try connection.quotedIdentifier(name))")
        }
        return url(database: name)
    }

    /// The newest `/usr/lib/postgresql/N/bin` that has initdb and pg_ctl.
    private static func findBinaries() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap(Int.init).sorted(by: >)
        for version in versions {
            let bin = "\(root)/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: bin + "/initdb"),
                FileManager.default.isExecutableFile(atPath: bin + "/pg_ctl")
            {
                return bin
            }
        }
        throw ToolRun.Failed(description: "no initdb under \(root)/*/bin: run scripts/setup (it installs postgresql)")
    }

    private static func tool(_ runAs: [String], _ path: String, _ arguments: [String]) throws {
        if runAs.isEmpty {
            try ToolRun.run(path, arguments)
        } else {
            try ToolRun.run(runAs[0], Array(runAs.dropFirst()) + [path] + arguments)
        }
    }

    /// Restarts the server (`pg_ctl restart -m fast`: every connection is
    /// cut, as by a database restart in production) and waits until it
    /// takes connections again. Only for a test's own cluster.
    public func restart() throws {
        precondition(!isShared, "restarting the shared cluster would break every other suite's connections")
        let data = folder + "/data"
        try PostgresCluster.tool(runAs, binaries + "/pg_ctl", ["-D", data, "-l", folder + "/server.log", "-m", "fast", "-w", "-t", "60", "restart"])
        let pidLine = (try? String(contentsOfFile: data + "/postmaster.pid", encoding: .utf8))?.split(separator: "\n").first
        guard let pidLine, let pid = pid_t(pidLine) else { throw ToolRun.Failed(description: "pg_ctl restart left no server") }
        current.withLock { $0 = pid }
        PostgresCluster.watch(pid: pid, folder: folder, keep: true)
        let address = try PostgresAddress(url(database: "postgres"))
        try admin.withLock { $0 = try PostgresConnection(address) }
    }

    /// Stops the server for `seconds` (`pg_ctl stop -m fast`: every
    /// connection is cut and new ones are refused, a database outage), then
    /// starts it again and waits until it takes connections. Only for a
    /// test's own cluster.
    public func outage(seconds: Double) throws {
        precondition(!isShared, "stopping the shared cluster would break every other suite's connections")
        let data = folder + "/data"
        try PostgresCluster.tool(runAs, binaries + "/pg_ctl", ["-D", data, "-m", "fast", "-w", "-t", "60", "stop"])
        Thread.sleep(forTimeInterval: seconds)
        try PostgresCluster.tool(runAs, binaries + "/pg_ctl", ["-D", data, "-l", folder + "/server.log", "-w", "-t", "60", "start"])
        let pidLine = (try? String(contentsOfFile: data + "/postmaster.pid", encoding: .utf8))?.split(separator: "\n").first
        guard let pidLine, let pid = pid_t(pidLine) else { throw ToolRun.Failed(description: "pg_ctl start left no server") }
        current.withLock { $0 = pid }
        PostgresCluster.watch(pid: pid, folder: folder, keep: true)
        let address = try PostgresAddress(url(database: "postgres"))
        try admin.withLock { $0 = try PostgresConnection(address) }
    }

    /// Stops a test's own cluster by its PID (an immediate shutdown) and removes its folder.
    public func stop() {
        precondition(!isShared, "the shared cluster stops at exit")
        let pid = self.pid
        kill(pid, SIGQUIT)
        for _ in 0..<200 where kill(pid, 0) == 0 { usleep(25_000) }
        if ProcessInfo.processInfo.environment["DLPIPE_KEEP_TEMP"] != "1" {
            _ = try? ToolRun.run("/bin/rm", ["-rf", folder])
        }
    }

    /// A crashed test process runs no exit handler: this shell ends the
    /// server once the test process is gone, then removes its folder unless `keep`.
    private static func watch(pid: pid_t, folder: String, keep: Bool) {
        try? ToolRun.start("/bin/sh", [
            "-c",
            "while kill -0 \(getpid()) 2>/dev/null && kill -0 \(pid) 2>/dev/null; do sleep 1; done; "
                + "kill -0 \(getpid()) 2>/dev/null || kill -QUIT \(pid) 2>/dev/null; "
                + (keep ? "" : "while kill -0 \(pid) 2>/dev/null; do sleep 0.2; done; rm -rf '\(folder)'"),
        ])
    }

    private static func stopAtExit(pid: pid_t, folder: String) {
        let keep = ProcessInfo.processInfo.environment["DLPIPE_KEEP_TEMP"] == "1"
        watch(pid: pid, folder: folder, keep: keep)
        // Registered after TempDir's own handler (the folder was made first),
        // so it runs before the folder is removed: handlers run in reverse.
        stopAtExit.withLock { $0 = (pid, keep ? nil : folder) }
        atexit {
            guard let (pid, folder) = PostgresCluster.stopAtExit.withLock({ $0 }) else { return }
            // SIGQUIT: an immediate shutdown; nothing in these databases is kept.
            kill(pid, SIGQUIT)
            for _ in 0..<200 where kill(pid, 0) == 0 { usleep(25_000) }
            // Removed here, once the server is gone: TempDir's own removal
            // (Foundation's removeItem) left the server's folder behind.
            if let folder { _ = try? ToolRun.run("/bin/rm", ["-rf", folder]) }
        }
    }

    private static let stopAtExit = Mutex<(pid: pid_t, folder: String?)?>(nil)
}
