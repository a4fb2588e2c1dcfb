import Foundation
import Synchronization

/// Child processes for tests, started with posix_spawn and an empty signal mask
/// (a Foundation `Process` started from a test thread can inherit a mask that
/// blocks SIGTERM), stopped with kill + waitpid.
///
/// Every child but a server has a deadline (`timeout`, 300 s unless a test
/// asks for less; far above what any healthy run takes, even on a loaded
/// machine; nil for a server that lives as long as its test):
/// past it the child is killed (exit 137) and its stderr ends with a line that
/// says so, so a hang fails that test's expectations instead of the suite's
/// whole run.
final class Subprocess: @unchecked Sendable {
    // @unchecked: `pid` and the pipes are set once in init; reads happen on the
    // caller's thread only; `reaped` is a Mutex shared with the watchdog.
    let pid: pid_t
    private let stdoutFD: Int32
    private let stderrFD: Int32
    private var exited: Int32?
    /// True once the child is reaped: its pid may then belong to another
    /// process, so the watchdog must not signal it any more.
    private let reaped = Mutex(false)
    /// Set when the watchdog killed the child.
    let timedOut = Atomic<Bool>(false)
    /// The signal that ended the child, once reaped (nil when it exited).
    private(set) var endingSignal: Int32?
    private let timeout: Double?
    static let defaultTimeout = 300.0

    /// An output pipe that starts full (see `init`).
    enum FullPipe { case stdout, stderr }

    /// Starts `path` with `arguments`; stdin is /dev/null unless `stdin` is given.
    /// With `full`, that pipe is filled before the child starts (with lines of
    /// `#`), so that the child's first write to it blocks until the test reads:
    /// a reader that does not read, as a terminal held with Ctrl-S.
    init(_ path: String, _ arguments: [String], environment: [String: String] = [:], stdin: String? = nil,
         full: FullPipe? = nil, timeout: Double? = Subprocess.defaultTimeout) throws {
        var outPipe: [Int32] = [0, 0]
        var errPipe: [Int32] = [0, 0]
        guard pipe(&outPipe) == 0, pipe(&errPipe) == 0 else { throw POSIXError(.EMFILE) }
        switch full {
        case .stdout: Self.fill(outPipe[1])
        case .stderr: Self.fill(errPipe[1])
        case nil: break
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        for fd in outPipe + errPipe { posix_spawn_file_actions_addclose(&actions, fd) }
        // Nothing else of the test process leaks in (other tests' pipes, opened
        // without O_CLOEXEC): a child under `ulimit -n` must see only its own.
        _ = spawnActionsCloseFrom(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGTERM)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        let envStrings = env.map { "\($0.key)=\($0.value)" }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = envStrings.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let rc = posix_spawn(&child, path, &actions, &attributes, argv, envp)
        close(outPipe[1])
        close(errPipe[1])
        guard rc == 0 else {
            close(outPipe[0])
            close(errPipe[0])
            throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .ENOENT)
        }
        pid = child
        stdoutFD = outPipe[0]
        stderrFD = errPipe[0]
        self.timeout = timeout
        if let timeout {
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [weak self] in self?.expire() }
        }
    }

    /// The watchdog: kills a child still running at its deadline.
    private func expire() {
        reaped.withLock { done in
            guard !done, kill(pid, SIGKILL) == 0 else { return }
            timedOut.store(true, ordering: .relaxed)
        }
    }

    deinit {
        if exited == nil {
            kill(pid, SIGKILL)
            _ = waitForExit()
        }
        close(stdoutFD)
        close(stderrFD)
    }

    /// Reads one line of stdout (blocking), without the newline; nil at EOF.
    func readStdoutLine() -> String? { readLine(stdoutFD) }

    /// Reads one line of stderr (blocking), without the newline; nil at EOF.
    func readStderrLine() -> String? { readLine(stderrFD) }

    private func readLine(_ fd: Int32) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1 {
            if byte == 10 { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
        return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }

    /// Reads stdout until a line contains `text` (an event of a --json run);
    /// false at EOF.
    @discardableResult
    func waitForLine(containing text: String) -> Bool {
        while let line = readStdoutLine() {
            if line.contains(text) { return true }
        }
        return false
    }

    /// Closes this side of the child's stdout, as a reader such as `head` that
    /// went away: the child's next write fails (EPIPE, or SIGPIPE). The
    /// descriptor is pointed at /dev/null, so that reading it later (`finish`)
    /// sees an end at once and closing it later closes nothing else.
    func closeStdout() {
        let null = open("/dev/null", O_RDONLY)
        dup2(null, stdoutFD)
        close(null)
    }

    /// Sends a signal.
    func signal(_ number: Int32) { kill(pid, number) }

    /// Reads stdout and stderr to their ends (on two threads, so neither pipe
    /// fills up), then reaps the child.
    func finish() -> (status: Int32, stdout: String, stderr: String) {
        let (status, out, err) = finishBytes()
        var stderr = String(decoding: err, as: UTF8.self)
        if timedOut.load(ordering: .relaxed) {
            stderr += "\n[test watchdog: killed after \(timeout ?? 0) s: the child hung]\n"
        }
        return (status, String(decoding: out, as: UTF8.self), stderr)
    }

    /// `finish`, with stdout and stderr as bytes (a body written to stdout).
    func finishBytes() -> (status: Int32, stdout: [UInt8], stderr: [UInt8]) {
        let group = DispatchGroup()
        let out = Box()
        let err = Box()
        for (fd, box) in [(stdoutFD, out), (stderrFD, err)] {
            group.enter()
            Thread.detachNewThread {
                box.data = Subprocess.readAll(fd)
                group.leave()
            }
        }
        group.wait()
        return (waitForExit(), out.data, err.data)
    }

    /// Waits at most `seconds` for the child: its exit code, or 128 + signal; nil
    /// when it was still running then (it is killed, so that a test of
    /// something that would hang fails in seconds instead).
    func waitForExit(within seconds: Double) -> Int32? {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            self.waitForExit()
            done.signal()
        }
        if done.wait(timeout: .now() + seconds) == .success { return exited }
        reaped.withLock { done in if !done { kill(pid, SIGKILL) } }
        done.wait()
        return nil
    }

    /// Waits for the child; its exit code, or 128 + signal.
    @discardableResult
    func waitForExit() -> Int32 {
        if let exited { return exited }
        // Wait without reaping, then reap under the lock the watchdog takes, so
        // it never signals a pid the kernel has handed to another process.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        var status: Int32 = 0
        reaped.withLock { done in
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            done = true
        }
        let signaled = (status & 0x7f) != 0
        let code = signaled ? 128 + (status & 0x7f) : (status >> 8) & 0xff
        if signaled { endingSignal = status & 0x7f }
        exited = code
        return code
    }

    /// Writes to the pipe's end `fd` until it is full, without blocking.
    private static func fill(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        let line = [UInt8](repeating: UInt8(ascii: "#"), count: 1023) + [10]
        while line.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        // A write of up to a page is all or nothing: less than a line may be left.
        var newline: UInt8 = 10
        while write(fd, &newline, 1) > 0 {}
        _ = fcntl(fd, F_SETFL, flags)
    }

    private static func readAll(_ fd: Int32) -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            result.append(contentsOf: buffer[0..<n])
        }
        return result
    }

    private final class Box: @unchecked Sendable { var data: [UInt8] = [] }
}

/// glibc's posix_spawn_file_actions_addclosefrom_np (2.34+), which the Glibc
/// module does not import (it needs _GNU_SOURCE).
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func spawnActionsCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32
