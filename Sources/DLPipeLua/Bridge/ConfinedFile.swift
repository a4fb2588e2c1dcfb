import DLPipe
import Foundation

/// A regular file inside the output directory, opened once and checked as
/// opened, for `dl.read` and `f.sha256`.
///
/// Checking a path and then opening it leaves a gap: between the two, the name
/// can become a symlink to a file outside the directory (a swap between check
/// and use), and the outside file is what gets read. Here the opened file
/// itself is checked: its real path (the kernel's, through /proc/self/fd) must
/// lie inside the output directory, outside `.dlpipe/`, and it must be a
/// regular file; every byte then comes from that descriptor, so what was
/// checked is what is read. O_NONBLOCK keeps a FIFO under the name from
/// hanging the open (it is then refused as not a regular file).
struct ConfinedFile: ~Copyable {
    let descriptor: Int32

    /// Opens `path` (relative to `root`, or absolute) for reading; `root` is
    /// the output directory's canonical path.
    init(_ path: String, root: String) throws(ScriptError) {
        let full = path.hasPrefix("/") ? path : root + "/" + path
        // A first check by name, for the error message in the ordinary case;
        // the check of the opened file below is the one that counts.
        guard let real = TargetPath.canonical(full) else { throw ScriptError("no such file: \(path)") }
        guard Self.isInside(real, root: root) else { throw ScriptError("\(path) is outside the output directory") }
        let fd = open(full, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { throw ScriptError("cannot read \(path): \(String(cString: strerror(errno)))") }
        do throws(ScriptError) {
            var info = stat()
            guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
                throw ScriptError("cannot read \(path): not a regular file")
            }
            guard let opened = Self.realPath(of: fd) else {
                throw ScriptError("cannot read \(path): where it was opened is unknown")
            }
            guard Self.isInside(opened, root: root) else { throw ScriptError("\(path) is outside the output directory") }
        } catch {
            close(fd)
            throw error
        }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// The file's size now (0 when unknown).
    var size: Int {
        var info = stat()
        return fstat(descriptor, &info) == 0 ? Int(info.st_size) : 0
    }

    /// The whole file, from its first byte; nil when it holds more than `limit` bytes (it may
    /// grow while read: the limit holds whatever its size said before).
    func readAll(atMost limit: Int = .max) throws(ScriptError) -> [UInt8]? {
        var result: [UInt8] = []
        result.reserveCapacity(min(size, limit))
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let got = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if got < 0 && errno == EINTR { continue }
            if got < 0 { throw ScriptError("read error: \(String(cString: strerror(errno)))") }
            if got == 0 { return result }
            if got > limit - result.count { return nil }
            result.append(contentsOf: buffer[0..<got])
        }
    }

    /// Inside `root`, and not the state's folder (`.dlpipe/`, which scripts never read).
    static func isInside(_ real: String, root: String) -> Bool {
        guard real == root || real.hasPrefix(root + "/") else { return false }
        let state = root + "/" + StateLayout.folderName
        return real != state && !real.hasPrefix(state + "/")
    }

    /// Where the kernel says the open file `fd` is (the link /proc/self/fd/N):
    /// the path it was reached by, symlinks resolved, at the moment of the open.
    static func realPath(of fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
