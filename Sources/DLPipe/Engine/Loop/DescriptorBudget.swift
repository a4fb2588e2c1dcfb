import Foundation

/// How many transfers the process's file-descriptor limit (`ulimit -n`) leaves
/// room for. Without this a low limit made every transfer fail to open its
/// socket at once ("Couldn't connect to server"), even where a few at a time
/// would all have finished.
enum DescriptorBudget {
    /// Descriptors one transfer may hold: its socket, its part file, and a
    /// second socket or resolver pair while it connects.
    static let perTransfer = 3
    /// Kept free for the rest of the run (state checkpoints, `dl.read`, a
    /// directory opened for mkdir or syncfs).
    static let reserve = 4

    /// Transfers that fit beside the descriptors open now (0 when none fits).
    static func transfers() -> Int {
        max(0, (limit() - inUse() - reserve) / perTransfer)
    }

    /// True when not even one more descriptor can be opened.
    static func exhausted() -> Bool { inUse() >= limit() - 1 }

    /// The soft limit on open descriptors.
    static func limit() -> Int {
        var limits = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0, limits.rlim_cur != rlim_t.max else { return Int.max / 2 }
        return Int(clamping: limits.rlim_cur)
    }

    /// Descriptors open now (Linux: the entries of /proc/self/fd, minus the one
    /// that reads them); the whole limit when even that one cannot be opened.
    static func inUse() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return errno == EMFILE ? limit() : 0 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            if entry.pointee.d_name.0 != 0x2E { count += 1 }  // skip "." and ".."
        }
        return max(0, count - 1)
    }
}
