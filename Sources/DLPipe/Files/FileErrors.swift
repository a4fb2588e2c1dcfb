#if canImport(Glibc)
import Glibc
#endif

/// File-system helpers with errors worded for people.
package enum FileErrors {
    /// An `io` error naming the file and the system's reason (errno).
    package static func io(_ what: String, _ path: String, errno code: Int32 = errno) -> DownloadError {
        DownloadError(.io, "\(what) \(path): \(String(cString: strerror(code)))")
    }
}
