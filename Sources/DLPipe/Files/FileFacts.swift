#if canImport(Glibc)
import Glibc
#endif

/// What one stat says of a file in the output directory: enough to tell the
/// file a run placed from a newer one renamed over it (the inode), from the
/// same file changed since (size and modification time), and from something
/// that is not a plain file at all.
struct FileFacts: Equatable {
    var size: Int64
    var inode: UInt64
    /// Nanoseconds since 1970.
    var modified: Int64
    /// A regular file (not a folder, a symlink when not followed, a FIFO...).
    var isRegular: Bool

    init(_ info: stat) {
        size = Int64(info.st_size)
        inode = UInt64(info.st_ino)
        modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        isRegular = (info.st_mode & S_IFMT) == S_IFREG
    }

    /// The modification time in whole seconds, as an HTTP date carries it.
    var modifiedSeconds: Int64 { modified >= 0 ? modified / 1_000_000_000 : (modified - 999_999_999) / 1_000_000_000 }

    /// The file as the state remembers it from now on.
    func placed(at relative: String) -> PlacedFile {
        PlacedFile(path: relative, size: size, inode: inode, modified: modified)
    }
}
