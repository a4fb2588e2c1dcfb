internal import CPosix
#if canImport(Glibc)
import Glibc
#endif

/// The output directory, held open. The files of every download are checked,
/// created and renamed through paths relative to its descriptor (the `*at(2)`
/// calls): the kernel then walks the one or two components under the directory,
/// not the whole absolute path, on each of the several calls a file costs. The
/// descriptor also names the file system for `syncfs`.
final class OutputDirectory: @unchecked Sendable {
    // @unchecked: immutable after init; the descriptor is only read.
    /// The canonical absolute path.
    let root: String
    /// The open directory, or -1 when it could not be opened (no read
    /// permission, say): then every call uses the absolute path.
    let descriptor: Int32

    init(root: String) {
        self.root = root
        descriptor = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    }

    deinit { if descriptor >= 0 { close(descriptor) } }

    /// The absolute path of a relative one, for messages and public results.
    func absolute(_ relative: String) -> String { root + "/" + relative }

    /// Runs `body` with the directory and the path to hand to an `*at(2)` call.
    private func at<T>(_ relative: String, _ body: (Int32, String) -> T) -> T {
        descriptor >= 0 ? body(descriptor, relative) : body(AT_FDCWD, absolute(relative))
    }

    /// Whether anything (a symlink included, not followed) has this name.
    func exists(_ relative: String) -> Bool {
        at(relative) { directory, path in
            var info = stat()
            return fstatat(directory, path, &info, AT_SYMLINK_NOFOLLOW) == 0
        }
    }

    /// The facts of the file with this name, the name itself (a symlink is
    /// not followed); nil when nothing has it.
    func facts(_ relative: String) -> FileFacts? {
        at(relative) { directory, path in
            var info = stat()
            return fstatat(directory, path, &info, AT_SYMLINK_NOFOLLOW) == 0 ? FileFacts(info) : nil
        }
    }

    /// Opens (creating) a part file; see `PartFile`. `exclusive` (a download
    /// with no part file of its own yet): the file must be new, and nil comes
    /// back when the name exists.
    func openPart(
        _ relative: String, keeping offset: Int64, exclusive: Bool = false, truncating: Bool = true
    ) throws(DownloadError) -> PartFile? {
        let fd = at(relative) { directory, path in
            // A fresh start truncates in open(2); a resume keeps exactly `offset` bytes.
            // O_NOFOLLOW (and O_EXCL, which never follows): a NAME.part planted as a
            // symlink is never written through.
            let create = exclusive ? O_CREAT | O_EXCL : O_CREAT | (offset == 0 && truncating ? O_TRUNC : 0)
            return openat(directory, path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | create, 0o644)
        }
        if fd < 0 && exclusive && errno == EEXIST { return nil }
        return try PartFile(descriptor: fd, path: absolute(relative), keeping: offset, truncating: truncating)
    }

    /// Opens an existing part file for one segment of a split download, its
    /// writes at `offset` and on (nothing is created or truncated).
    func openSegment(_ relative: String, at offset: Int64) throws(DownloadError) -> PartFile {
        let fd = at(relative) { directory, path in
            openat(directory, path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0)
        }
        return try PartFile(descriptor: fd, path: absolute(relative), keeping: offset, truncating: false, positional: true)
    }

    /// Empties an existing part file (nothing when there is none, and none is
    /// created); the errno on failure.
    func emptyPart(_ relative: String) -> Int32? {
        let fd = at(relative) { directory, path in
            openat(directory, path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_TRUNC, 0)
        }
        if fd < 0 { return errno == ENOENT ? nil : errno }
        close(fd)
        return nil
    }

    /// Removes a file (nothing when there is none).
    func remove(_ relative: String) {
        _ = at(relative) { directory, path in unlinkat(directory, path, 0) }
    }

    /// Renames without ever replacing an existing file; the errno on failure.
    func moveNoClobber(_ from: String, _ to: String) -> Int32? {
        let moved = at(from) { fromDirectory, fromPath in
            at(to) { toDirectory, toPath in dl_renameat_noreplace(fromDirectory, fromPath, toDirectory, toPath) }
        }
        if moved == 0 { return nil }
        let code = errno
        // File systems without RENAME_NOREPLACE: a hard link fails on an existing
        // name just the same, then the old name goes.
        guard code == EINVAL || code == ENOSYS else { return code }
        return FileSystem.moveNoClobber(absolute(from), absolute(to))
    }

    /// Renames, replacing whatever has the new name; the errno on failure.
    func replace(_ from: String, _ to: String) -> Int32? {
        let moved = at(from) { fromDirectory, fromPath in
            at(to) { toDirectory, toPath in renameat(fromDirectory, fromPath, toDirectory, toPath) }
        }
        return moved == 0 ? nil : errno
    }

    /// Flushes the file system holding the directory (every file of it).
    func sync() {
        _ = descriptor >= 0 ? dl_syncfs(descriptor) : dl_syncfs_path(root)
    }
}
