import Foundation

extension RunLock {
    /// The process that holds the lock at `path` now, without touching it: the
    /// kernel's table of locks (/proc/locks) names the holder of each flock by
    /// the locked file's inode. Nil when nobody holds it (a run that died,
    /// however it died, holds nothing) or when the file does not exist. Where
    /// /proc/locks cannot be read, the PID in the file if that process lives.
    ///
    /// Taking the lock to find out would be wrong: a run starting at that
    /// moment would find it held and exit 3.
    public static func holder(path: String) -> Int32? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        guard let table = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else {
            return livePID(inFile: path)
        }
        return holder(inode: UInt64(info.st_ino), locks: table)
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

    private static func livePID(inFile path: String) -> Int32? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
            let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0, kill(pid, 0) == 0
        else { return nil }
        return pid
    }
}
