internal import CPosix
#if canImport(Glibc)
import Glibc
#endif

/// A whole part file's descriptor, kept open from the end of its body until
/// its batch is made durable, so that a batch of a few large files can
/// `fdatasync` each of them instead of `syncfs` of the whole file system.
///
/// `syncfs` waits for every dirty page of the file system: the part files still
/// streaming, and other programs' files. `fdatasync` waits only for the file's
/// own pages (and the journal commit that makes its blocks and size readable),
/// which its write-back (`PartFile.finish`) has mostly written already.
final class PartFileSync: Sendable {
    private let descriptor: Int32

    /// Takes ownership of an open descriptor; it is closed with this object.
    init(owning descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// The file's data, and the metadata needed to read it back, are on disk
    /// when this returns true (retried on EINTR); false with errno set.
    func syncData() -> Bool {
        while fdatasync(descriptor) != 0 {
            if errno != EINTR { return false }
        }
        return true
    }

    /// Makes every file durable, one `fdatasync` each; false as soon as one
    /// fails (the caller then falls back to `syncfs`).
    ///
    /// The data of all of them is written and waited for first: on ext4 the
    /// end of a file's write-back changes its extents in the running journal
    /// transaction, so an fdatasync called while the file's writes are still
    /// in flight needs a commit of its own (a disk cache flush each: 1.5 to
    /// 4 ms per file were measured, one after the other). Once every file's
    /// writes are done, the first fdatasync commits what all of them need and
    /// the others find it committed. Each still flushes the disk's cache on its
    /// own, which is why only batches of a few files are synced this way
    /// (`EngineLoop.perFileSyncLimit`).
    static func syncAll(_ files: [PartFileSync]) -> Bool {
        for file in files { dl_start_write_back(file.descriptor, 0, 0) }
        for file in files { dl_wait_write_back(file.descriptor) }
        return files.allSatisfy { $0.syncData() }
    }
}
