import Foundation
import TestSupport

/// Modification times and inodes of files, for the tests of what a run may
/// replace (adoption, `--overwrite`, files the user changed).
enum FileTimes {
    /// Sets a file's access and modification times to `seconds` since 1970.
    static func set(_ path: String, seconds: Int, nanoseconds: Int = 0) throws {
        var times = [timespec(tv_sec: seconds, tv_nsec: nanoseconds), timespec(tv_sec: seconds, tv_nsec: nanoseconds)]
        guard utimensat(AT_FDCWD, path, &times, 0) == 0 else { throw TestFailure("cannot set the time of \(path)") }
    }

    /// The modification time, to the nanosecond; nil when missing.
    static func modified(_ path: String) -> timespec? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mtim : nil
    }

    static func inode(_ path: String) -> UInt64? {
        var info = stat()
        return lstat(path, &info) == 0 ? UInt64(info.st_ino) : nil
    }

    /// Copies `from` to `to` with its modification time, as `cp -p` does.
    static func copyKeepingTime(_ from: String, to: String) throws {
        guard let time = modified(from) else { throw TestFailure("cannot copy \(from)") }
        try TestFiles.create(to, Data(bytes(at: from)))
        try set(to, seconds: time.tv_sec, nanoseconds: time.tv_nsec)
    }

    /// Seconds of a date long ago (2001-09-09), for served files: a user's
    /// file written now can then never share their second.
    static let longAgo = 1_000_000_000
}
