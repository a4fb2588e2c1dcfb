#if canImport(Glibc)
import Glibc
#endif

/// Small files that workers leave in the shared directory for each other (a
/// job folder's `name` and `directory` token, another job's `active` lock):
/// the directory may be writable by others, so whatever sits under such a
/// name is read as a hint only, never followed (no symlinks), never waited
/// on (a FIFO would block an open or a read forever: a worker's start, a
/// `dlpipe status DIR`), never read past a small bound.
enum SharedFolderFile {
    /// The bytes of the regular file at `path` when it holds at most `limit`;
    /// nil for anything else (missing, a symlink, a FIFO, a device, too large).
    static func contents(_ path: String, limit: Int) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        guard FileSystem.isRegular(descriptor) else { return nil }
        var buffer = [UInt8](repeating: 0, count: limit + 1)
        var count = 0
        while count <= limit {
            let got = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + count, limit + 1 - count) }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { return nil }
            if got == 0 { break }
            count += got
        }
        guard count <= limit else { return nil }
        return Array(buffer[0..<count])
    }
}
