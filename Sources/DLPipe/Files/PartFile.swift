internal import CPosix
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// The `NAME.part` file a transfer writes into, by descriptor, straight from the
/// transfer callback: no buffering of our own, no hop between threads.
///
/// Write-back starts as the body streams: every `writeBackStep` bytes, and for
/// the rest when the body is whole (`finish`). Without it the kernel writes a
/// file back only once dirty pages pile up past its background threshold
/// (gigabytes on a large machine), so the batch's sync would write the whole
/// body after the transfer, one after the other instead of together.
final class PartFile {
    let path: String
    private var fd: Int32
    /// The file's length so far, and how much of it write-back was asked for.
    private var end: Int64
    private var writeBackAsked: Int64
    static let writeBackStep: Int64 = 8 << 20

    /// Takes the descriptor of a part file just opened (or -1 with errno set; see
    /// `OutputDirectory.openPart`), keeping the first `offset` bytes for a resume
    /// and dropping anything after them.
    init(descriptor fd: Int32, path: String, keeping offset: Int64) throws(DownloadError) {
        guard fd >= 0 else { throw FileErrors.io("cannot create", path) }
        guard offset == 0 || (ftruncate(fd, off_t(offset)) == 0 && lseek(fd, off_t(offset), SEEK_SET) >= 0) else {
            let error = FileErrors.io("cannot prepare", path)
            close(fd)
            throw error
        }
        self.path = path
        self.fd = fd
        end = offset
        writeBackAsked = offset
    }

    deinit { closeFile() }

    /// Writes all bytes; false with errno set when the disk refuses.
    func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard FileSystem.writeAll(fd, bytes) else { return false }
        end += Int64(bytes.count)
        if end - writeBackAsked >= Self.writeBackStep { startWriteBack() }
        return true
    }

    /// The transfer is over: start write-back of what is left, then close. (A
    /// body that broke off keeps its bytes for a resume, so they are worth
    /// writing too.)
    func finish() {
        if fd >= 0, end > writeBackAsked { startWriteBack() }
        closeFile()
    }

    /// Asks for write-back on a queue of its own, through a duplicate of the
    /// descriptor (the part file may be closed meanwhile): sync_file_range
    /// blocks while the disk's request queue is full (up to 50 ms seen here),
    /// which on this thread would stall every transfer.
    private func startWriteBack() {
        let (offset, length) = (writeBackAsked, end - writeBackAsked)
        writeBackAsked = end
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { return }  // only a hint: the batch's sync still writes it
        Self.writeBackQueue.async {
            dl_start_write_back(copy, offset, length)
            close(copy)
        }
    }
    private static let writeBackQueue = DispatchQueue(label: "dlpipe-write-back")

    func closeFile() {
        if fd >= 0 { close(fd) }
        fd = -1
    }
}

/// File-system helpers with errors worded for people.
enum FileErrors {
    /// An `io` error naming the file and the system's reason (errno).
    static func io(_ what: String, _ path: String, errno code: Int32 = errno) -> DownloadError {
        DownloadError(.io, "\(what) \(path): \(String(cString: strerror(code)))")
    }
}

/// Small file-system operations the engine needs.
enum FileSystem {
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    static func size(_ path: String) -> Int64? {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : nil
    }

    /// Size and inode of a file, from one stat: enough to tell the file an
    /// earlier run placed from a newer one renamed over it.
    static func identity(_ path: String) -> (size: Int64, inode: UInt64)? {
        var info = stat()
        return stat(path, &info) == 0 ? (Int64(info.st_size), UInt64(info.st_ino)) : nil
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
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
