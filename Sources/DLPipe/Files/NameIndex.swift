#if canImport(Glibc)
import Glibc
#endif

/// The names in the output directory's folders: each folder is read once (one
/// pass of getdents), then kept up to date with the names this engine creates
/// and removes. It answers the engine's first guess of a free name, which cost
/// two `lstat`s per download before (about 5 % of the CPU of many small files:
/// each lookup of a missing name makes and frees a kernel dentry).
///
/// A guess never protects a file. Every name is taken by a call that fails on
/// an existing name: a link or rename without replace, an O_EXCL open. A file
/// that another program creates meanwhile is therefore never replaced; the
/// download takes the next free name instead.
final class NameIndex {
    private let output: OutputDirectory
    /// Names by folder (relative to the output directory, "" for the top).
    private var folders: [String: Set<String>] = [:]

    init(output: OutputDirectory) {
        self.output = output
    }

    func contains(_ relative: String) -> Bool {
        let (folder, name) = Self.split(relative)
        if let names = folders[folder] { return names.contains(name) }
        let names = Self.read(folder, in: output)
        folders[folder] = names
        return names.contains(name)
    }

    /// A name now on disk. A folder not read yet is left alone: reading it
    /// later finds the name there.
    func insert(_ relative: String) {
        let (folder, name) = Self.split(relative)
        folders[folder]?.insert(name)
    }

    /// A name gone from disk.
    func remove(_ relative: String) {
        let (folder, name) = Self.split(relative)
        folders[folder]?.remove(name)
    }

    /// Drops what was read of a folder: the next lookup reads it again (the
    /// disk showed a name that other programs created meanwhile).
    func forget(folder: String) {
        folders[folder] = nil
    }

    /// A folder made (with its parents): each of its components is now a name
    /// in the folder above it.
    func insertFolders(_ relative: String) {
        var parent = ""
        for component in relative.split(separator: "/") {
            let path = parent.isEmpty ? String(component) : parent + "/" + component
            insert(path)
            parent = path
        }
    }

    /// By bytes: `lastIndex(of: "/")` on the String walks Characters.
    private static func split(_ relative: String) -> (folder: String, name: String) {
        let bytes = relative.utf8
        guard let slash = bytes.lastIndex(of: 0x2F) else { return ("", relative) }
        return (String(relative[..<slash]), String(relative[bytes.index(after: slash)...]))
    }

    /// Every name in a folder; none when it cannot be read (missing, say).
    private static func read(_ folder: String, in output: OutputDirectory) -> Set<String> {
        let fd = output.descriptor >= 0
            ? openat(output.descriptor, folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            : open(folder.isEmpty ? output.root : output.absolute(folder), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        guard let directory = fdopendir(fd) else {
            close(fd)
            return []
        }
        defer { closedir(directory) }
        var names: Set<String> = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.insert(name) }
        }
        return names
    }
}
