import Foundation

/// Where a download's file goes. Names and directories from hooks or callers are
/// checked here: they must stay inside the output directory, symlinks included.
package struct TargetPath: Equatable, Sendable {
    /// The directory relative to the output directory ("" for the top).
    public var directory: String
    /// The file's base name.
    public var name: String

    /// The path relative to the output directory.
    public var relative: String { directory.isEmpty ? name : directory + "/" + name }

    /// Validates `directory` + `name` (either may hold `/`), lexically and against
    /// symlinks under `root` (an absolute, canonical path). Throws a `hook` error.
    /// `checkingLeaf: false` leaves the file itself unchecked, for callers that
    /// move aside from any existing file anyway (one `lstat` fewer per download).
    public static func resolve(root: String, directory: String?, name: String, checkingLeaf: Bool = true)
        throws(DownloadError) -> TargetPath
    {
        // An absolute directory that is the root itself is the root: how the
        // command line's `-o /folder/name` names a file of a folder outside
        // `-d` (whose root that folder becomes) by its whole path.
        let directory = directory == root ? "" : directory
        try checkLength(directory: directory, name: name)
        if directory?.isEmpty ?? true, isPlainFileName(name), name != stateFolder {
            try checkPart(Substring(name))
            // No folder and no separator: nothing to resolve, and no ancestor
            // that could be a symlink (the leaf is checked below when asked).
            let target = TargetPath(directory: "", name: name)
            if checkingLeaf { try target.checkSymlinks(root: root) }
            return target
        }
        let target = try lexical(directory: directory, name: name)
        try target.checkSymlinks(root: root, checkingLeaf: checkingLeaf)
        return target
    }

    /// `resolve` without the file system: `..` above the top, absolute paths,
    /// NUL bytes and empty names are refused; symlinks are not looked at. For
    /// checks made before the output directory exists (a job's top level).
    public static func lexical(directory: String?, name: String) throws(DownloadError) -> TargetPath {
        try checkLength(directory: directory, name: name)
        let prefix = directory.flatMap { $0.isEmpty ? nil : $0 + "/" } ?? ""
        let joined = prefix + name
        if joined.hasPrefix("/") {
            throw DownloadError(.hook, "path \(quoted(joined)) is absolute; it must stay inside the output directory")
        }
        var parts: [Substring] = []
        for part in joined.split(separator: "/", omittingEmptySubsequences: true) {
            if part.utf8.contains(0) {  // not contains("\0"): Foundation's search is slow
                throw DownloadError(.hook, "path \(quoted(joined)) contains a NUL byte")
            }
            try checkPart(part)
            if part == "." { continue }
            if part == ".." {
                guard !parts.isEmpty else {
                    throw DownloadError(.hook, "path \(quoted(joined)) leaves the output directory")
                }
                parts.removeLast()
                continue
            }
            parts.append(part)
        }
        if parts.first == Substring(stateFolder) {
            throw DownloadError(.hook, "path \(quoted(joined)) is inside \(stateFolder)/, dlpipe's own state, which no download may name")
        }
        guard let base = parts.popLast() else {
            throw DownloadError(.hook, "path \(quoted(joined)) names no file")
        }
        return TargetPath(directory: parts.joined(separator: "/"), name: String(base))
    }

    /// The output directory's folder of dlpipe's own (state, lock): no download's path may
    /// name it or anything in it, through a symlink either.
    static let stateFolder = ".dlpipe"

    /// A name that `resolve` would return as it is: not empty, not `.` or
    /// `..`, without `/` or NUL.
    static func isPlainFileName(_ name: String) -> Bool {
        let bytes = name.utf8
        guard !bytes.isEmpty, name != ".", name != ".." else { return false }
        return !bytes.contains { $0 == 0x2F || $0 == 0 }
    }

    /// The canonical absolute path (symlinks resolved) of an existing path.
    public static func canonical(_ path: String) -> String? { FileSystem.realPath(path) }

    /// Fails when an existing ancestor (or the file itself, unless `checkingLeaf`
    /// is false) resolves outside `root`.
    public func checkSymlinks(root: String, checkingLeaf: Bool = true) throws(DownloadError) {
        var path = root
        let parts = relative.split(separator: "/")
        for part in checkingLeaf ? parts[...] : parts.dropLast() {
            path += "/" + part
            guard FileSystem.exists(path) else { return }
            guard let real = FileSystem.realPath(path) else { return }
            if real != root && !real.hasPrefix(root + "/") {
                throw DownloadError(.hook, "path \(quoted(relative)) leaves the output directory through the symlink \(quoted(path))")
            }
            let state = root + "/" + Self.stateFolder
            if real == state || real.hasPrefix(state + "/") {
                throw DownloadError(.hook, "path \(quoted(relative)) reaches \(Self.stateFolder)/, dlpipe's own state, through \(quoted(path))")
            }
        }
    }
}

/// A value in quotes with control characters escaped, safe to print on a terminal.
package func quoted(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar.value {
        case 0x22: out += "\\\""
        case 0x5C: out += "\\\\"
        case _ where isControl(scalar): out += String(format: "\\x%02x", scalar.value)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

/// A C0 or C1 control character (DEL included): what `quoted` escapes,
/// and what must never reach a terminal as it is.
package func isControl(_ scalar: Unicode.Scalar) -> Bool {
    scalar.value < 0x20 || (0x7F..<0xA0).contains(scalar.value)
}
