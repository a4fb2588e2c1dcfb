import Foundation

/// The state is the owner's alone: the `.dlpipe` folder 0700, the database,
/// its -wal and -shm files and the run lock 0600. A state made by
/// an older dlpipe (0755 and 0644) is tightened when a run or `status` opens
/// it; a state file kept elsewhere (`--state FILE`) is tightened, its folder
/// (the user's) is left as it is.
package enum StatePermissions {
    /// Creates the state's folder (and its parents, as `mkdir -p`): 0700 when
    /// it is a `.dlpipe` folder, which an existing one is also set to. Nil
    /// when it is ready; else the line that says why not.
    ///
    /// An existing `.dlpipe` must be this user's: its state, its locks and a
    /// queue worker's part files are written there, and in an output
    /// directory others may write into (a shared one), a `.dlpipe` of theirs,
    /// or a symlink of theirs to a folder of this user's, would have them
    /// choose what dlpipe writes where. A symlink of this user's own to a
    /// folder of this user's (the state moved to another disk) is followed.
    package static func makeFolder(_ folder: String) -> String? {
        let failed = { (code: Int32) in "cannot create \(folder): \(String(cString: strerror(code)))" }
        guard (folder as NSString).lastPathComponent == StateLayout.folderName else {
            return FileSystem.makeDirectories(folder).map(failed)
        }
        let parent = (folder as NSString).deletingLastPathComponent
        if !parent.isEmpty, let code = FileSystem.makeDirectories(parent) { return failed(code) }
        if mkdir(folder, 0o700) == 0 { return nil }
        guard errno == EEXIST else { return failed(errno) }
        if let problem = foreignOwner(folder) { return problem }
        tighten(folder, to: 0o700)
        return nil
    }

    /// Why the existing `folder` is not this user's to write into, or nil:
    /// the link (when it is one) and the folder must both be the user's.
    private static func foreignOwner(_ folder: String) -> String? {
        let me = geteuid()
        var link = stat()
        guard lstat(folder, &link) == 0 else { return nil }  // gone meanwhile: the open that follows says so
        if (link.st_mode & S_IFMT) == S_IFLNK && link.st_uid != me {
            return "\(folder) is a symbolic link of another user's (uid \(link.st_uid)); dlpipe keeps its state there and "
                + "follows no one else's link (remove it, or run as its owner)"
        }
        var info = stat()
        guard stat(folder, &info) == 0 else { return nil }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { return "\(folder) is not a folder; dlpipe keeps its state there (move it away)" }
        if info.st_uid != me {
            return "\(folder) belongs to another user (uid \(info.st_uid)); dlpipe keeps its state and locks there and "
                + "writes into no one else's (remove it, or run as its owner)"
        }
        return nil
    }

    /// Creates an empty file 0600 unless something is there already (a
    /// file's mode is set by `tighten` once it is known to be a state).
    static func createPrivate(_ path: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd >= 0 { close(fd) }
    }

    /// Sets a state database and its -wal and -shm files to 0600.
    static func tighten(database path: String) {
        for file in [path, path + "-wal", path + "-shm"] { tighten(file, to: 0o600) }
    }

    /// Takes group and other permissions away from `path` when it has any (a
    /// stat per file, a chmod only for files made by an older dlpipe). Not
    /// through a symlink; a failure (a file owned by another user) leaves the
    /// mode as it was, as it does not stop the run.
    static func tighten(_ path: String, to mode: mode_t) {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) != S_IFLNK, info.st_mode & 0o077 != 0 else { return }
        _ = chmod(path, mode)
    }
}
