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
    /// Writes go to `end` with pwrite(2), whatever the descriptor's offset: a
    /// split download's segment (docs/design/split.md).
    private let positional: Bool

    /// Takes the descriptor of a part file just opened (or -1 with errno set; see
    /// `OutputDirectory.openPart`), keeping the first `offset` bytes for a resume
    /// and dropping anything after them. `truncating` false (a split download's
    /// part file) keeps every byte: the writes start at `offset`.
    init(
        descriptor fd: Int32, path: String, keeping offset: Int64, truncating: Bool = true, positional: Bool = false
    ) throws(DownloadError) {
        guard fd >= 0 else { throw FileErrors.io("cannot create", path) }
        let kept = offset == 0 || !truncating || ftruncate(fd, off_t(offset)) == 0
        guard kept && (offset == 0 || positional || lseek(fd, off_t(offset), SEEK_SET) >= 0) else {
            let error = FileErrors.io("cannot prepare", path)
            close(fd)
            throw error
        }
        self.path = path
        self.fd = fd
        end = offset
        writeBackAsked = offset
        self.positional = positional
    }

    deinit { closeFile() }

    /// Writes all bytes; false with errno set when the disk refuses.
    func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let written = positional ? FileSystem.writeAll(fd, bytes, at: end) : FileSystem.writeAll(fd, bytes)
        guard written else { return false }
        end += Int64(bytes.count)
        if end - writeBackAsked >= Self.writeBackStep { startWriteBack() }
        return true
    }

    /// The transfer is over: start write-back of what is left, then close. (A
    /// body that broke off keeps its bytes for a resume, so they are worth
    /// writing too.) `keepingForSync`: the descriptor is not closed but kept
    /// for the batch's `fdatasync` (`takeForSync`).
    func finish(keepingForSync: Bool = false) {
        if fd >= 0, end > writeBackAsked { startWriteBack() }
        if keepingForSync, fd >= 0 {
            kept = PartFileSync(owning: fd)
            fd = -1
        }
        closeFile()
    }

    /// The descriptor `finish(keepingForSync: true)` kept, handed over once.
    func takeForSync() -> PartFileSync? {
        defer { kept = nil }
        return kept
    }
    private var kept: PartFileSync?

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
            ThreadName.enter("dlpipe-writebk")
            dl_start_write_back(copy, offset, length)
            close(copy)
        }
    }
    private static let writeBackQueue = DispatchQueue(label: "dlpipe-write-back")

    /// A duplicate of the descriptor (for a sync elsewhere), or nil.
    func duplicateDescriptor() -> Int32? {
        guard fd >= 0 else { return nil }
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        return copy >= 0 ? copy : nil
    }

    func closeFile() {
        if fd >= 0 { close(fd) }
        fd = -1
    }
}
