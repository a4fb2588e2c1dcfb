extension TargetPath {
    /// The longest file name Linux file systems take (NAME_MAX), in bytes.
    static let maxNameBytes = 255
    /// The longest path under the output directory (PATH_MAX), in bytes.
    static let maxPathBytes = 4096

    /// Refuses a name or path no file system takes, before any work on it
    /// (splitting, quoting, `lstat`): a 3 MB name from a script cost seconds
    /// per check, and its message carried it whole. Each part of `name` (it
    /// may hold `/`) is checked where it is split; here, the whole and a
    /// plain name.
    static func checkLength(directory: String?, name: String) throws(DownloadError) {
        let total = (directory?.utf8.count ?? 0) + name.utf8.count
        if total > maxPathBytes {
            throw DownloadError(.hook, "path of \(total) bytes is longer than the \(maxPathBytes) a path may have (\(quoted(URLLimit.shown(name))))")
        }
    }

    /// One part of a path (a folder or the file's name) past `maxNameBytes`.
    static func checkPart(_ part: Substring) throws(DownloadError) {
        let count = part.utf8.count
        if count > maxNameBytes {
            throw DownloadError(.hook, "name of \(count) bytes is longer than the \(maxNameBytes) a file name may have (\(quoted(URLLimit.shown(String(part)))))")
        }
    }
}
