import DLPipe
import Foundation

/// `dl.write`, `dl.append` and `dl.remove`: the files a script places in the
/// output directory, confined as `dl.read` is and remembered in the state
/// (its `written` table), so that a later run knows them as the scripts' own.
///
/// The rules (docs/lua-api.md): a path must stay inside the output directory,
/// symlinks included, and outside `.dlpipe/`; a script writes and appends only
/// to files that scripts wrote (or new ones), never to a download's file nor to
/// a file that was there and that nothing of dlpipe's placed (no-clobber); it
/// removes only files this job wrote and downloads' files, and a removed
/// download is forgotten by the state so that the next run fetches it again.
///
/// Folders are walked one descriptor at a time and each opened folder is
/// checked where the kernel says it is (as `ConfinedFile` does), so a folder
/// swapped for a symlink between a check and a use is still caught.
struct ScriptFiles {
    /// The output directory's canonical path.
    let root: String
    let state: any DownloadState
    /// The job's name (`JobStore.namespace`): who wrote a file.
    let job: String
    /// The job's earlier name (`JobStore.earlierNamespace`): its files are the job's too.
    var earlierJob: String?
    /// The downloads' files as the run first read them (`KnownDownloadFiles`).
    let downloads: KnownDownloadFiles

    /// The suffix of the engine's part files, which scripts leave alone.
    static let partSuffix = ".part"

    /// Replaces (atomically: a temporary file renamed over it) or creates the file.
    func write(_ path: String, _ data: [UInt8]) throws(ScriptError) {
        let place = try locate(path, creatingFolders: true)
        defer { close(place.folder) }
        let existing = try checkWritable(place)
        // Remembered before the file exists, as the engine records a target before
        // its part file: a crash in between leaves a record and no file.
        try recorded { () throws(StateFailure) in try state.setWriter(of: place.relative, to: job) }
        // Named after the file when that fits in a name (255 bytes): a name of 250
        // bytes made a temporary name too long for ext4, and the write failed.
        let random = UInt32.random(in: 0...UInt32.max)
        let temporary = place.name.utf8.count <= 200 ? ".\(place.name).dlpipe-\(random)" : ".dlpipe-write-\(random)"
        let fd = openat(place.folder, temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw failure("cannot write \(path)") }
        do throws(ScriptError) {
            try Self.writeAll(fd, data, path: path)
            guard fsync(fd) == 0 else { throw failure("cannot write \(path)") }
        } catch {
            close(fd)
            unlinkat(place.folder, temporary, 0)
            throw error
        }
        close(fd)
        if existing {
            // Ours (checked above): replaced in one step.
            guard renameat(place.folder, temporary, place.folder, place.name) == 0 else {
                let error = failure("cannot write \(path)")
                unlinkat(place.folder, temporary, 0)
                throw error
            }
        } else {
            // A new name: linked, which fails rather than replace a file that
            // appeared meanwhile (a download placed there, say).
            let linked = linkat(place.folder, temporary, place.folder, place.name, 0)
            let code = errno
            unlinkat(place.folder, temporary, 0)
            if linked != 0 {
                if code == EEXIST { throw Self.clobber(path) }
                errno = code
                throw failure("cannot write \(path)")
            }
        }
    }

    /// Appends `line` and a newline (unless it ends with one), creating the file when missing.
    func append(_ path: String, _ line: [UInt8]) throws(ScriptError) {
        let place = try locate(path, creatingFolders: true)
        defer { close(place.folder) }
        let existing = try checkWritable(place)
        if !existing { try recorded { () throws(StateFailure) in try state.setWriter(of: place.relative, to: job) } }
        let flags = O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (existing ? 0 : O_CREAT | O_EXCL)
        let fd = openat(place.folder, place.name, flags, 0o644)
        guard fd >= 0 else {
            if errno == EEXIST { throw Self.clobber(path) }
            throw failure("cannot append to \(path)")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw ScriptError("cannot append to \(path): not a regular file")
        }
        var bytes = line
        if bytes.last != 0x0A { bytes.append(0x0A) }
        try Self.writeAll(fd, bytes, path: path)
    }

    /// Removes a file this job wrote, or a download's file (which the state then
    /// forgets); returns the download's file's path (relative), or nil for a written one.
    @discardableResult
    func remove(_ path: String) throws(ScriptError) -> String? {
        let place = try locate(path, creatingFolders: false)
        defer { close(place.folder) }
        var info = stat()
        guard fstatat(place.folder, place.name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            throw ScriptError("no such file: \(path)")
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw ScriptError("\(path) is not a regular file") }
        // The state itself, not the run's copy: the download may have finished since.
        let download = try recorded { () throws(StateFailure) in try state.isDownloadFile(place.relative) }
        if !download {
            guard let writer = try recorded({ () throws(StateFailure) in try state.writer(of: place.relative) }) else {
                throw ScriptError("\(path) was not placed by dlpipe (it was there before, or another program put it there); dl.remove removes only the downloads' files and the files this job wrote")
            }
            guard writer == job || writer == earlierJob else {
                throw ScriptError("\(path) was written by the job \(writer.debugDescription); only that job removes it")
            }
        }
        guard unlinkat(place.folder, place.name, 0) == 0 else { throw failure("cannot remove \(path)") }
        try recorded { () throws(StateFailure) in try state.forgetWritten(place.relative) }
        guard download else { return nil }
        try recorded { () throws(StateFailure) in try state.forgetDownloadFile(place.relative) }
        downloads.forget(place.relative)
        return place.relative
    }

    // MARK: -

    /// An open folder inside the output directory and a file name in it.
    private struct Place {
        var folder: Int32
        var name: String
        /// The file's path relative to the output directory, as the kernel has the folder.
        var relative: String
    }

    /// Whether the file exists (then it is a script's own); throws for a file a
    /// script may not write: a download's, or one nothing of dlpipe's placed.
    /// A script's own file is known by one lookup; a new name is checked against
    /// the downloads' files the run read once (a file a download of this run
    /// placed since is there, and so refused as not a script's).
    private func checkWritable(_ place: Place) throws(ScriptError) -> Bool {
        var info = stat()
        guard fstatat(place.folder, place.name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            if try recorded({ () throws(StateFailure) in try downloads.contains(place.relative, in: state) }) {
                throw Self.downloadsFile(place.relative)
            }
            return false
        }
        guard try recorded({ () throws(StateFailure) in try state.writer(of: place.relative) }) != nil else {
            if try recorded({ () throws(StateFailure) in try state.isDownloadFile(place.relative) }) {
                throw Self.downloadsFile(place.relative)
            }
            throw Self.clobber(place.relative)
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw ScriptError("\(place.relative) is not a regular file") }
        return true
    }

    private static func downloadsFile(_ path: String) -> ScriptError {
        ScriptError("\(path) is a download's file, which scripts do not write (dl.remove it first, or write another name)")
    }

    private static func clobber(_ path: String) -> ScriptError {
        ScriptError("\(path) is already there and no script wrote it (it was there before, or another program put it there); dlpipe never replaces such a file")
    }

    /// Opens the folder of `path` (relative to the output directory, or absolute
    /// inside it), creating missing folders when asked, each checked as opened.
    private func locate(_ path: String, creatingFolders: Bool) throws(ScriptError) -> Place {
        var relative = path
        if path.hasPrefix("/") {
            guard path.hasPrefix(root + "/") else { throw ScriptError("\(path) is outside the output directory") }
            relative = String(path.dropFirst(root.count + 1))
        }
        // "dirx/" (or "dirx/.") names a folder: the lexical split would make it a file "dirx".
        let last = relative.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        if last.isEmpty || last == "." || last == ".." {
            throw ScriptError("\(path) names a folder, not a file: give the file's name after the last /")
        }
        // Too long a path is refused before a folder is made: past PATH_MAX the kernel
        // cannot name the folders it made, which left 2,000 empty ones behind and was
        // reported as a symlink leading outside.
        let length = root.utf8.count + 1 + relative.utf8.count
        guard length < Int(PATH_MAX) else {
            throw ScriptError("\(path) is too long: \(length) bytes with the output directory, and a path has at most \(Int(PATH_MAX) - 1)")
        }
        if let long = relative.split(separator: "/").first(where: { $0.utf8.count > 255 }) {
            throw ScriptError("\(path) is too long: its part \(long.prefix(16))... has \(long.utf8.count) bytes, and a name has at most 255")
        }
        let target: TargetPath
        do throws(DownloadError) {
            target = try TargetPath.lexical(directory: nil, name: relative)
        } catch {
            throw ScriptError(error.message)
        }
        if target.name.hasSuffix(Self.partSuffix) {
            throw ScriptError("\(path): names ending in .part are the downloads' part files")
        }
        var folder = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0 else { throw failure("cannot open the output directory") }
        var components = target.directory.split(separator: "/").map(String.init)
        if target.directory.isEmpty { components = [] }
        if components.first == ".dlpipe" || (components.isEmpty && target.name == ".dlpipe") {
            close(folder)
            throw ScriptError("\(path) is inside .dlpipe/, the state, which scripts do not touch")
        }
        for component in components {
            var next = openat(folder, component, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if next < 0 && errno == ENOENT && creatingFolders {
                if mkdirat(folder, component, 0o755) != 0 && errno != EEXIST {
                    let error = failure("cannot create the folder of \(path)")
                    close(folder)
                    throw error
                }
                next = openat(folder, component, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            }
            guard next >= 0 else {
                let error = errno == ENOENT ? ScriptError("no such file: \(path)") : failure("cannot open the folder of \(path)")
                close(folder)
                throw error
            }
            close(folder)
            folder = next
            guard let real = ConfinedFile.realPath(of: folder), ConfinedFile.isInside(real, root: root) else {
                close(folder)
                throw ScriptError("\(path) is outside the output directory (through a symlink), or inside .dlpipe/")
            }
        }
        let real = ConfinedFile.realPath(of: folder) ?? root
        guard ConfinedFile.isInside(real, root: root) else {
            close(folder)
            throw ScriptError("\(path) is outside the output directory")
        }
        let prefix = real == root ? "" : String(real.dropFirst(root.count + 1)) + "/"
        return Place(folder: folder, name: target.name, relative: prefix + target.name)
    }

    private static func writeAll(_ fd: Int32, _ data: [UInt8], path: String) throws(ScriptError) {
        var offset = 0
        while offset < data.count {
            let wrote = data.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if wrote < 0 && errno == EINTR { continue }
            guard wrote > 0 else { throw ScriptError("cannot write \(path): \(String(cString: strerror(errno)))") }
            offset += wrote
        }
    }

    /// A state call, its failure a script error: nothing that depends on it happens.
    private func recorded<T>(_ call: () throws(StateFailure) -> T) throws(ScriptError) -> T {
        do throws(StateFailure) { return try call() } catch { throw ScriptError(error.message) }
    }

    private func failure(_ what: String) -> ScriptError {
        ScriptError("\(what): \(String(cString: strerror(errno)))")
    }
}

/// The downloads' files of the state, read once per run (one scan of every
/// record) when a script first creates a file: asking the state for each new
/// file would scan the downloads table every time (it has no index on files).
final class KnownDownloadFiles {
    private var paths: Set<String>?

    func contains(_ path: String, in state: any DownloadState) throws(StateFailure) -> Bool {
        if paths == nil { paths = try state.downloadFiles() }
        return paths!.contains(path)
    }

    /// A download's file that a script removed (the state forgot it).
    func forget(_ path: String) { paths?.remove(path) }
}
