import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A helper program (initdb, pg_ctl) run to its end, its output kept for the
/// error message. Started with posix_spawn and an empty signal mask, so that
/// what it starts (a server) does not inherit a test thread's blocked
/// signals and stays stoppable with SIGTERM or SIGQUIT.
public enum ToolRun {
    public struct Failed: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs `path arguments`, waits for it, and returns its combined output;
    /// throws when it exits with another status than 0.
    @discardableResult
    public static func run(_ path: String, _ arguments: [String]) throws -> String {
        let (status, output) = try spawnAndWait(path, arguments)
        guard status == 0 else {
            throw Failed(description: "\(([path] + arguments).joined(separator: " ")) exited with \(status): \(output)")
        }
        return output
    }

    /// Starts `path arguments` in the background and leaves it (a watchdog shell).
    public static func start(_ path: String, _ arguments: [String]) throws {
        _ = try spawn(path, arguments, output: "/dev/null")
    }

    private static func spawnAndWait(_ path: String, _ arguments: [String]) throws -> (Int32, String) {
        let outputFile = NSTemporaryDirectory() + "dlpipe-tool-\(UUID().uuidString.prefix(8)).out"
        defer { unlink(outputFile) }
        let pid = try spawn(path, arguments, output: outputFile)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw Failed(description: "waitpid \(path): errno \(errno)") }
        }
        let output = (try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? ""
        // WIFEXITED / WEXITSTATUS by hand: the macros do not import.
        let exitStatus = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (exitStatus, output)
    }

    private static func spawn(_ path: String, _ arguments: [String], output: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of the test process goes along: the server lives as long
        // as the test process, and a pipe of another test that it held open
        // would never see its end (that test's child would seem to hang).
        _ = spawnActionsCloseFrom(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
        guard rc == 0 else { throw Failed(description: "cannot start \(path): \(String(cString: strerror(rc)))") }
        return pid
    }
}

/// glibc's posix_spawn_file_actions_addclosefrom_np (2.34+), which the Glibc
/// module does not import (it needs _GNU_SOURCE).
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func spawnActionsCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32
