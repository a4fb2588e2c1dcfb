import Foundation
import Synchronization

/// A tmpfs mounted on a fresh directory for one test (needs root and mount(8));
/// unmounted when released.
final class TmpfsMount: @unchecked Sendable {
    // @unchecked: `path` is set once in init.
    let path: String

    /// Whether this machine lets the tests mount a tmpfs (checked once).
    static let available: Bool = {
        guard getuid() == 0, let probe = try? TmpfsMount(options: "size=64k") else { return false }
        _ = probe
        return true
    }()

    /// Mounts `tmpfs -o OPTIONS`; throws when mount(8) fails.
    init(options: String) throws {
        path = try TempDir.make("mnt")
        let mount = try Subprocess("/bin/mount", ["-t", "tmpfs", "-o", options, "tmpfs", path]).finish()
        guard mount.status == 0 else { throw TestFailure("mount -o \(options) failed: \(mount.stderr)") }
    }

    deinit {
        // -l: a process of a failed test that still holds a file does not keep it mounted.
        _ = try? Subprocess("/bin/umount", ["-l", path]).finish()
        rmdir(path)
    }
}

extension DLPipeRun {
    /// Runs `PREFIX... dlpipe ARGS` (e.g. under prlimit), killed with SIGKILL
    /// after `seconds`: a hang shows up as status 137, not as a stuck suite.
    static func run(_ arguments: [String], under prefix: [String], within seconds: Double) async throws -> DLPipeRun {
        let path = prefix.first ?? Paths.binary
        let rest = prefix.isEmpty ? arguments : Array(prefix.dropFirst()) + [Paths.binary] + arguments
        let started = Date()
        let process = try Subprocess(path, rest, environment: ["NO_COLOR": "1"])
        let done = Flag()
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
            if !done.isSet { process.signal(SIGKILL) }
        }
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let (status, out, err) = process.finish()
                done.set()
                let seconds = Date().timeIntervalSince(started)
                continuation.resume(returning: DLPipeRun(status: status, stdout: out, stderr: err, seconds: seconds))
            }
        }
    }
}

/// A flag set once, read from any thread.
final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}
