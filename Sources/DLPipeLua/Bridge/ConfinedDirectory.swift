import DLPipe
import Foundation

/// A folder inside the output directory, opened once and checked as opened,
/// for `dl.list`: the same confinement as `ConfinedFile` (`dl.read`), by the
/// same checks. The opened folder's real path (the kernel's, through
/// /proc/self/fd) must lie inside the output directory and outside `.dlpipe/`;
/// its entries are then read from that descriptor, and each entry's
/// attributes with `fstatat` relative to it, never following a symlink, so a
/// name swapped for a symlink meanwhile cannot lead the listing outside.
struct ConfinedDirectory: ~Copyable {
    /// One entry: its name, kind ("file", "dir", "link" or "other"), size in
    /// bytes (a file's; 0 else) and modification time (seconds since 1970).
    struct Entry {
        /// The name's bytes as the file system has them (not always UTF-8).
        let name: [UInt8]
        let kind: String
        let size: Int64
        let mtime: Double
    }

    let descriptor: Int32
    /// Whether this is the output directory itself, whose `.dlpipe/` is left out.
    let isRoot: Bool

    /// Opens `path` (relative to `root`, or absolute; "" is `root` itself);
    /// `root` is the output directory's canonical path.
    init(_ path: String, root: String) throws(ScriptError) {
        let full = path.isEmpty ? root : path.hasPrefix("/") ? path : root + "/" + path
        // A first check by name, for the message; the opened folder's is the one that counts.
        guard let real = TargetPath.canonical(full) else { throw ScriptError("no such folder: \(path)") }
        guard ConfinedFile.isInside(real, root: root) else {
            throw ScriptError("\(path) is outside the output directory, or inside .dlpipe/")
        }
        let fd = open(full, O_RDONLY | O_CLOEXEC | O_DIRECTORY | O_NOCTTY)
        guard fd >= 0 else { throw ScriptError("cannot list \(path): \(String(cString: strerror(errno)))") }
        guard let opened = ConfinedFile.realPath(of: fd), ConfinedFile.isInside(opened, root: root) else {
            close(fd)
            throw ScriptError("\(path) is outside the output directory, or inside .dlpipe/")
        }
        descriptor = fd
        isRoot = opened == root
    }

    deinit { close(descriptor) }

    /// The folder's entries, sorted by name (bytes), without `.` and `..`,
    /// and without `.dlpipe` in the output directory itself.
    func entries() throws(ScriptError) -> [Entry] {
        // fdopendir takes the descriptor it is given: a duplicate, so that
        // closedir and deinit each close their own.
        let copy = dup(descriptor)
        guard copy >= 0, let stream = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            throw ScriptError("cannot list the folder: \(String(cString: strerror(errno)))")
        }
        defer { closedir(stream) }
        var out: [Entry] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix(while: { $0 != 0 })) }
            if name == Array(".".utf8) || name == Array("..".utf8) || (isRoot && name == Array(StateLayout.folderName.utf8)) {
                continue
            }
            var info = stat()
            let found = (name + [0]).withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { fstatat(descriptor, $0.baseAddress!, &info, AT_SYMLINK_NOFOLLOW) }
            }
            guard found == 0 else { continue }  // gone meanwhile
            let kind: String
            switch info.st_mode & S_IFMT {
            case S_IFREG: kind = "file"
            case S_IFDIR: kind = "dir"
            case S_IFLNK: kind = "link"
            default: kind = "other"
            }
            let mtime = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
            out.append(Entry(name: name, kind: kind, size: kind == "file" ? Int64(info.st_size) : 0, mtime: mtime))
        }
        return out.sorted { $0.name.lexicographicallyPrecedes($1.name) }
    }
}
