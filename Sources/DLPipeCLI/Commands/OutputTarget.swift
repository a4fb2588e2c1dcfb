import DLPipe
import Foundation

/// Where `get -o` puts the body, as curl and wget users expect: a bare name goes under `-d`, a path with a `/` (absolute or relative to
/// the working directory) is the file itself, and `-` is stdout. Every check
/// here runs before any request.
enum OutputTarget: Equatable {
    /// A file name under the output directory.
    case name(String)
    /// A file in a folder of its own choosing: `folder` is canonical (symlinks
    /// resolved) and exists. The state and lock stay those of `-d`.
    case path(folder: String, name: String)
    /// Standard output.
    case stdout

    /// Reads `-o VALUE`; a bad value is a usage error.
    static func parse(_ value: String) throws -> OutputTarget {
        if value == "-" { return .stdout }
        guard !value.isEmpty, !value.utf8.contains(0) else { throw usage("-o wants a file name, a path or -") }
        guard value.contains("/") else {
            guard value != ".", value != ".." else { throw usage("-o \(value.debugDescription) names a directory, not a file") }
            return .name(value)
        }
        guard !value.hasSuffix("/") else { throw usage("-o \(value.debugDescription) names a directory, not a file") }
        let name = (value as NSString).lastPathComponent
        guard name != ".", name != ".." else { throw usage("-o \(value.debugDescription) names a directory, not a file") }
        let parent = value.hasPrefix("/") && value.dropFirst().firstIndex(of: "/") == nil
            ? "/" : (value as NSString).deletingLastPathComponent
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: parent, isDirectory: &isFolder) else {
            throw usage("-o \(value.debugDescription): the folder \(parent.debugDescription) does not exist")
        }
        guard isFolder.boolValue, let folder = TargetPath.canonical(parent) else {
            throw usage("-o \(value.debugDescription): \(parent.debugDescription) is not a folder")
        }
        return .path(folder: folder, name: name)
    }

    private static func usage(_ message: String) -> UsageError { UsageError(message, command: "get") }

    /// The request's name and directory. A file outside the output directory
    /// gets its folder as the directory (the engine takes an absolute directory
    /// equal to its root as the root itself), so that its record in the
    /// state of `-d` is keyed by the whole path: `-o x`, `-o /a/x` and `-o /b/x`
    /// are three downloads, not one.
    var request: (name: String?, directory: String?) {
        switch self {
        case .name(let name): return (name, nil)
        case .path(let folder, let name): return (name, folder)
        case .stdout: return (StdoutSink.bodyName, nil)
        }
    }

    /// Refuses (before any request) a target where something is that dlpipe did
    /// not place: a directory, or a file that the state of `-d` does not know as
    /// this URL's finished download of the same size. A file dlpipe placed is
    /// asked for again conditionally, as any re-run (docs/cli.md, "Cron").
    /// `--overwrite` allows any regular file (the body replaces it).
    func checkNoClobber(url: String, folder: String, statePath: String, overwrite: Bool = false) throws {
        let (name, directory) = request
        guard let name, self != .stdout else { return }
        let path = folder + "/" + name
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            throw UsageError("-o: \(path) is a directory", command: "get")
        }
        if overwrite, (info.st_mode & S_IFMT) == S_IFREG { return }
        // Keyed as the engine keys it: by the normalised URL.
        let key = DownloadRequest(url: URLNormalization.normalize(url), name: name, directory: directory).deduplicationKey
        let refusal = "-o: \(path) exists and dlpipe did not place it; it is never replaced (--overwrite replaces it, or remove it or choose another name)"
        guard FileManager.default.fileExists(atPath: statePath) else { throw UsageError(refusal, command: "get") }
        let record: DownloadRecord?
        do throws(StateFailure) {
            record = try StateStore(path: statePath).record(key: key)
        } catch {
            // Unreadable, the state cannot vouch for the file: it stays untouched.
            throw UsageError(refusal + " (the state cannot tell: \(error.message))", command: "get")
        }
        if let record, record.status == .finished, record.target == name {
            // dlpipe placed it; unless the user changed it since, it is ours to refresh.
            let modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
            let placed = record.placed
            let sizeChanged = record.bytes != Int64(info.st_size)
            let timeChanged = placed?.modified.map { $0 != modified } ?? false
            if !sizeChanged && !timeChanged { return }
            throw UsageError(
                "-o: \(path) was changed since dlpipe placed it (its \(sizeChanged ? "size" : "modification time") differs); "
                    + "it is not replaced (--overwrite replaces it, or remove it or choose another name)", command: "get")
        }
        throw UsageError(refusal, command: "get")
    }
}
