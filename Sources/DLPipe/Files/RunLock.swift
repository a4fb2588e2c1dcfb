import Foundation

/// One run at a time per output directory: an exclusive flock(2) on
/// `DIR/.dlpipe/lock`, which holds the holder's PID for the message others see.
/// The kernel drops the lock when its process dies, however it dies, so a lock
/// left by a dead process is no lock.
package final class RunLock: @unchecked Sendable {
    // @unchecked: the descriptor is set once and only closed in deinit.
    private let fd: Int32
    /// The lock file's path.
    public let path: String

    /// Why the lock could not be taken.
    public enum Failure: Error, Sendable {
        /// Another process holds it; its PID when the file names one.
        case held(pid: Int32?, path: String)
        /// The lock file could not be created, opened or locked; the message says why.
        case io(String)
    }

    /// Takes the lock of an output directory (`DIR/.dlpipe/lock`), or waits for it.
    public convenience init(directory: String, wait: Bool) throws(Failure) {
        try self.init(path: StateLayout(directory: directory).lock, wait: wait)
    }

    /// Takes the lock at `path` (for `--state FILE`: `FILE.lock`), or waits for it.
    /// `shared`: a worker of a shared queue, which holds the lock together
    /// with the job's other workers; a run without the queue still finds it held.
    public init(path: String, wait: Bool, shared: Bool = false) throws(Failure) {
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty, let problem = StatePermissions.makeFolder(folder) {
            throw .io(problem)
        }
        self.path = path
        // The owner's alone, like the state beside it (an older lock was 0644).
        // Never through a symlink, and a regular file only: the lock is
        // truncated and given this process's PID, and an output directory
        // others may write into (a shared one) could hold a link to any file
        // of this user's, which that write would have destroyed.
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard fd >= 0 else {
            let code = errno
            if code == ELOOP { throw .io("\(path) is a symbolic link; dlpipe follows none in its state folder (remove it)") }
            throw .io("cannot open \(path): \(String(cString: strerror(code)))")
        }
        guard FileSystem.isRegular(fd) else {
            close(fd)
            throw .io("\(path) is not a regular file; dlpipe keeps its lock there (remove it)")
        }
        StatePermissions.tighten(path, to: 0o600)
        // A `dlpipe status` that asks flock whether a run holds the lock (where
        // /proc/locks is missing) holds a shared lock for an instant: a run
        // that finds the lock taken asks again a few times before it says so.
        var probesWaited = 0
        while flock(fd, (shared ? LOCK_SH : LOCK_EX) | (wait ? 0 : LOCK_NB)) != 0 {
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK && probesWaited < 5 {
                probesWaited += 1
                usleep(10_000)
                continue
            }
            let code = errno
            let holder = RunLock.readPID(fd)
            close(fd)
            if code == EWOULDBLOCK { throw .held(pid: holder, path: path) }
            throw .io("cannot lock \(path): \(String(cString: strerror(code)))")
        }
        let text = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    }

    // Unlocked before the close: a process that another thread is spawning at
    // this moment holds a copy of the descriptor until its exec closes it, and
    // a close alone leaves the lock held through that copy (the lock belongs
    // to the open file, not to the descriptor). LOCK_UN drops it for all copies.
    deinit {
        flock(fd, LOCK_UN)
        close(fd)
    }

    /// Makes a shared lock exclusive when no other process holds it; false
    /// when one does (flock may then have dropped this one: the caller is
    /// letting go of it anyway).
    package func makeExclusiveIfAlone() -> Bool {
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            return false
        }
        return true
    }

    static func readPID(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return nil }
        return Int32(String(decoding: buffer[0..<n], as: UTF8.self).trimmingWhitespaceAndNewlines())
    }
}

extension String {
    fileprivate func trimmingWhitespaceAndNewlines() -> String {
        var s = Substring(self)
        while let c = s.last, c.isWhitespace { s.removeLast() }
        while let c = s.first, c.isWhitespace { s.removeFirst() }
        return String(s)
    }
}
