import Foundation

/// A few hundred KiB kept beside the state file while a run lasts, given up
/// when the run's last commit finds the disk full. A run that filled the disk
/// (its part file took the last block) could otherwise not write its own end:
/// `status` then showed it as killed, though it ended with exit 1 and said
/// why. Freed, the spare lets the last batch and the run's record reach the
/// disk; nothing else is written into it.
struct SpareSpace {
    /// Bytes kept: far more than the pages of a last batch and a run record
    /// (a few 4 KiB pages of the WAL), little beside any download.
    static let bytes = 256 * 1024

    /// The spare's path beside the state file `state`.
    let path: String

    init(beside state: String) {
        path = state + "-spare"
    }

    /// Writes the spare (0600) unless it is there; best effort: on a disk
    /// already full there is none, and the run goes on without it.
    func reserve() {
        var info = stat()
        if stat(path, &info) == 0 && Int(info.st_size) >= Self.bytes { return }
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        // Written, not only allocated: a sparse file would free nothing.
        let zeros = [UInt8](repeating: 0, count: Self.bytes)
        let written = zeros.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if written != Self.bytes { unlink(path) }
    }

    /// Removes the spare; whether there was one to free.
    @discardableResult
    func release() -> Bool {
        unlink(path) == 0
    }
}
