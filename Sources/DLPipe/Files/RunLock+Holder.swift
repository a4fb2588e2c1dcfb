import Foundation

extension RunLock {
    /// The process that holds the lock at `path` now, without touching it: the
    /// kernel's table of locks (/proc/locks) names the holder of each flock by
    /// the locked file's inode. Nil when nobody holds it (a run that died,
    /// however it died, holds nothing) or when the file does not exist. Where
    /// /proc/locks cannot be read, flock itself is asked (`probe`); a PID in
    /// the file never says on its own that a run holds the lock.
    ///
    /// Taking the lock to find out would be wrong: a run starting at that
    /// moment would find it held and exit 3.
    public static func holder(path: String) -> Int32? {
        // A symlink or a FIFO is no lock a run takes (`init` refuses them).
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        guard let table = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else {
            return probe(path: path)
        }
        return holder(inode: UInt64(info.st_ino), locks: table)
    }

    /// Whether a run holds the lock at `path`, from flock: a shared lock,
    /// asked without waiting, is refused exactly while a run holds its
    /// exclusive one. Granted, it is dropped at once (a run starting in that
    /// instant tries again: `init(path:wait:)`). The holder's PID is the one
    /// it wrote into the file after taking the lock; 0 when it has not yet.
    static func probe(path: String) -> Int32? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard FileSystem.isRegular(fd) else { return nil }
        while flock(fd, LOCK_SH | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            return errno == EWOULDBLOCK ? (readPID(fd) ?? 0) : nil
        }
        flock(fd, LOCK_UN)
        return nil
    }

    /// The PID of the flock on `inode` in a /proc/locks table: lines such as
    /// `2: FLOCK  ADVISORY  WRITE 5462 fe:00:16221969 0 EOF` (the device is
    /// not compared: on overlay file systems the table names the underlying
    /// one, which stat does not).
    static func holder(inode: UInt64, locks: String) -> Int32? {
        for line in locks.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            // A blocked waiter's line starts with "N: ->"; it holds nothing.
            guard fields.count >= 6, fields[1] == "FLOCK", let pid = Int32(fields[4]),
                let inodeField = fields[5].split(separator: ":").last, UInt64(inodeField) == inode
            else { continue }
            return pid
        }
        return nil
    }

}
