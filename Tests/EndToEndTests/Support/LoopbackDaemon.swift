import Foundation
import Glibc
import Synchronization

/// A server program (nginx, tinyproxy) run in the foreground on a loopback
/// port of its own. Such programs want a port number in their configuration
/// and refuse port 0, so a free port is found first; when another process
/// takes it before the server binds it, the server exits and this starts it
/// again on another port.
///
/// Stopped by PID: at `stop()` (or deinit), and by a watchdog shell that ends
/// it when the test process is gone (a crash leaves no server behind).
final class LoopbackDaemon: @unchecked Sendable {
    // @unchecked: set once in init.
    let process: Subprocess
    let watchdog: Subprocess
    /// The ports the server listens on.
    let ports: [Int]

    /// Starts the program that `command(ports)` gives (path and arguments), with
    /// `count` free ports, and waits until every port accepts connections.
    /// `ready`, when given, must also say yes (e.g. the server answers as
    /// itself, not some other process that took the port meanwhile).
    init(
        _ what: String, ports count: Int, attempts: Int = 5,
        command: ([Int]) throws -> (String, [String]),
        ready: (([Int]) -> Bool)? = nil
    ) throws {
        var lastError = ""
        for _ in 0..<attempts {
            let ports = try (0..<count).map { _ in try LoopbackDaemon.freePort() }
            guard Set(ports).count == count else { continue }
            let (path, arguments) = try command(ports)
            let process = try Subprocess(path, arguments, timeout: nil)
            if LoopbackDaemon.waitUntilReady(ports, process, seconds: 20, ready: { ready?(ports) ?? true }) {
                self.process = process
                self.ports = ports
                // Ends the server when the test process is gone (its pid no longer
                // answers kill -0); it exits itself when the server is gone.
                let parent = getpid()
                self.watchdog = try Subprocess(
                    "/bin/sh",
                    ["-c", "while kill -0 \(parent) 2>/dev/null && kill -0 \(process.pid) 2>/dev/null; do sleep 1; done; kill \(process.pid) 2>/dev/null"],
                    timeout: nil)
                LoopbackDaemon.registerForExit(self)
                return
            }
            process.signal(SIGTERM)
            let result = process.finish()
            lastError = result.stderr
            // Only a port clash is worth another try; anything else is a broken setup.
            guard result.stderr.contains("in use") || result.stderr.contains("Could not create listening") || result.status == 0
            else { break }
        }
        throw TestFailure("\(what) did not start on loopback: \(lastError)")
    }

    deinit { stop() }

    /// Daemons shared by a whole test process (`Nginx.shared`) live until it
    /// exits: they are stopped then, by PID.
    private static let started = Mutex<[LoopbackDaemon]>([])
    private static let exitHook: Void = { atexit { LoopbackDaemon.stopAll() } }()

    private static func registerForExit(_ daemon: LoopbackDaemon) {
        _ = exitHook
        started.withLock { $0.append(daemon) }
    }

    private static func stopAll() {
        for daemon in started.withLock({ $0 }) { daemon.stop() }
    }

    /// Stops the server (SIGTERM, by its PID) and waits for it (SIGKILL after 10 s).
    func stop() {
        if !process.hasExited { process.signal(SIGTERM) }
        _ = process.waitForExit(within: 10)
    }

    /// A port nobody listens on now: bound to 127.0.0.1:0 by the kernel, then released.
    static func freePort() throws -> Int {
        let (fd, port) = try boundSocket()
        close(fd)
        return port
    }

    /// A port on 127.0.0.1 where connections are refused for the rest of the
    /// test process: bound and never listening, so that no server started
    /// meanwhile can take it (a port found free and closed again was once
    /// taken by another test's server, and a "dead proxy" answered HTTP).
    static func refusingPort() throws -> Int {
        try boundSocket().port  // the descriptor stays open on purpose
    }

    private static func boundSocket() throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(fd, pointer, length) == 0 else { return -1 }
                return getsockname(fd, pointer, &length)
            }
        }
        guard bound == 0 else {
            close(fd)
            throw TestFailure("bind 127.0.0.1:0: errno \(errno)")
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Whether something accepts a TCP connection on 127.0.0.1:`port`.
    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Polls until every port accepts a connection and `ready` says yes while
    /// the process still runs; false when the process exited first or
    /// `seconds` passed. These servers have no other way to say they listen.
    private static func waitUntilReady(
        _ ports: [Int], _ process: Subprocess, seconds: Double, ready: () -> Bool
    ) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if process.hasExited { return false }
            if ports.allSatisfy(accepts), ready() { return !process.hasExited }
            usleep(20_000)
        }
        return false
    }
}

extension Subprocess {
    /// Whether the child has exited (or was reaped already), without reaping it.
    var hasExited: Bool {
        var info = siginfo_t()
        if waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) < 0 { return errno != EINTR }
        return info.si_signo != 0  // zero when no child changed state (WNOHANG)
    }
}

extension DLPipeRun {
    /// Runs `dlpipe ARGS` with extra environment variables (proxies, CA bundles, HOME).
    static func run(_ arguments: [String], environment: [String: String]) async throws -> DLPipeRun {
        var all = environment
        all["NO_COLOR"] = "1"
        let process = try Subprocess(Paths.binary, arguments, environment: all)
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let (status, out, err) = process.finish()
                continuation.resume(returning: DLPipeRun(status: status, stdout: out, stderr: err))
            }
        }
    }
}
