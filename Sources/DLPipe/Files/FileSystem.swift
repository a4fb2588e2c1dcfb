internal import CPosix
#if canImport(Glibc)
import Glibc
#endif

/// Small file-system operations the engine needs.
package enum FileSystem {
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Whether `descriptor` is a regular file (not a FIFO, a device, a directory).
    package static func isRegular(_ descriptor: Int32) -> Bool {
        var info = stat()
        return fstat(descriptor, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    static func size(_ path: String) -> Int64? {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : nil
    }

    /// Writes all of `bytes` to `fd` (short writes and EINTR go on); false with
    /// errno set when the disk refuses.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            done += n
        }
        return true
    }

    /// Writes all bytes at `offset` (pwrite(2): the descriptor's offset stays).
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Bool {
        var done = 0
        while done < bytes.count {
            let n = Glibc.pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            done += n
        }
        return true
    }

    /// Renames without ever replacing an existing file; the errno on failure.
    static func moveNoClobber(_ from: String, _ to: String) -> Int32? {
        if dl_rename_noreplace(from, to) == 0 { return nil }
        let code = errno
        // File systems without RENAME_NOREPLACE: a hard link fails on an existing
        // name just the same, then the old name goes.
        guard code == EINVAL || code == ENOSYS else { return code }
        if link(from, to) == 0 {
            unlink(from)
            return nil
        }
        return errno
    }

    /// `mkdir -p`; the errno on failure.
    static func makeDirectories(_ path: String) -> Int32? {
        var built = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            built += "/" + part
            if mkdir(built, 0o755) != 0 && errno != EEXIST { return errno }
        }
        return nil
    }

    /// The canonical absolute path (symlinks resolved) of an existing path.
    package static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
