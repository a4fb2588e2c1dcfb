#if canImport(Glibc)
import Glibc
#endif

/// Small files that workers leave in the shared directory for each other (a
/// job folder's `name` and `directory` token, another job's `active` lock):
/// the directory may be writable by others, so whatever sits under such a
/// name is read as a hint only, never followed (no symlinks), never waited
/// on (a FIFO would block an open or a read forever: a worker's start, a
/// `dlpipe status DIR`), never read past a small bound.
package enum SharedFolderFile {
    /// The bytes of the regular file at `path` when it holds at most `limit`;
    /// nil for anything else (missing, a symlink, a FIFO, a device, too large).
    package static func contents(_ path: String, limit: Int) -> [UInt8]? {
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

    /// Puts `bytes` under `path` whole or not at all: written beside it into a
    /// new file of this process's (whatever stood under that name, a FIFO or
    /// a link, is removed, never written through) and renamed onto it. The
    /// errno of the step that failed, nil on success.
    package static func replace(_ path: String, with bytes: [UInt8]) -> Int32? {
        let temporary = path + ".\(getpid()).tmp"
        unlink(temporary)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return errno }
        let written = bytes.withUnsafeBytes { FileSystem.writeAll(descriptor, $0) }
        let code = written ? 0 : errno
        close(descriptor)
        guard written else {
            unlink(temporary)
            return code
        }
        guard rename(temporary, path) == 0 else {
            let failed = errno
            unlink(temporary)
            return failed
        }
        return nil
    }
}
