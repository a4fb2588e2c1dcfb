#if canImport(Glibc)
import Glibc
#endif

extension OutputDirectory {
    /// Whether two regular files (relative paths, symlinks not followed) hold
    /// the same bytes: the sizes first, then the contents, 64 KiB at a time.
    /// A file that cannot be read is never the same.
    func sameBytes(_ a: String, _ b: String) -> Bool {
        let first = openForReading(a)
        defer { if first >= 0 { close(first) } }
        let second = openForReading(b)
        defer { if second >= 0 { close(second) } }
        guard first >= 0, second >= 0 else { return false }
        var infoA = stat(), infoB = stat()
        guard fstat(first, &infoA) == 0, fstat(second, &infoB) == 0,
            infoA.st_mode & S_IFMT == S_IFREG, infoB.st_mode & S_IFMT == S_IFREG,
            infoA.st_size == infoB.st_size
        else { return false }
        if infoA.st_dev == infoB.st_dev && infoA.st_ino == infoB.st_ino { return true }
        let chunk = 64 << 10
        var bufferA = [UInt8](repeating: 0, count: chunk), bufferB = [UInt8](repeating: 0, count: chunk)
        while true {
            let readA = Self.readFully(first, &bufferA), readB = Self.readFully(second, &bufferB)
            guard readA == readB, readA >= 0 else { return false }
            if readA == 0 { return true }
            if bufferA[..<readA] != bufferB[..<readB] { return false }
        }
    }

    private func openForReading(_ relative: String) -> Int32 {
        let path = absolute(relative)
        return descriptor >= 0
            ? openat(descriptor, relative, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            : open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
    }

    /// Reads until the buffer is full or the file ends; -1 on an error.
    private static func readFully(_ fd: Int32, _ buffer: inout [UInt8]) -> Int {
        var total = 0
        while total < buffer.count {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + total, $0.count - total) }
            if count < 0 { if errno == EINTR { continue }; return -1 }
            if count == 0 { break }
            total += count
        }
        return total
    }
}
