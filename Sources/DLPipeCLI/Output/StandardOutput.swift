import Foundation
import Synchronization

/// Standard output shared by all threads, written in whole lines (JSON Lines
/// can be thousands of events a second).
final class StandardOutput: Sendable {
    static let shared = StandardOutput()
    private let buffer = Mutex<[UInt8]>([])

    /// Lines go out at once to a pipe or terminal, where a reader waits for
    /// each event; into a regular file they are batched.
    private let batched: Bool = {
        var info = stat()
        return fstat(1, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }()

    func write(_ text: String) {
        buffer.withLock { bytes in
            bytes.append(contentsOf: text.utf8)
            if !batched || bytes.count >= 1 << 16 { Self.drain(&bytes) }
        }
    }

    func flush() { buffer.withLock { Self.drain(&$0) } }

    private static func drain(_ bytes: inout [UInt8]) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(1, $0.baseAddress! + done, $0.count - done) }
            if n <= 0 { break }
            done += n
        }
        bytes.removeAll(keepingCapacity: true)
    }
}
