#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// `dlpipe run --record DIR`: every response the engine receives (final ones
/// and redirect hops) goes to DIR as it arrives, in `Recording`'s layout.
/// Used on the engine thread only (the transfers' callbacks run there).
///
/// Recordings are kept as test fixtures, so no credential goes into them: a
/// URL's user-info is `***@` (as in the state), the lines of `Recording`'s
/// secret headers are left out, and the folder is 0700, its files 0600.
public final class ResponseRecorder: @unchecked Sendable {
    let directory: String
    private var next = 1
    private let index: Int32

    /// Makes DIR (an empty or new folder: a recording is never mixed with another).
    public init(directory: String) throws(DownloadError) {
        self.directory = directory
        if let code = FileSystem.makeDirectories(directory) {
            throw FileErrors.io("--record: cannot create", directory, errno: code)
        }
        let present = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        guard present.isEmpty else {
            throw DownloadError(.io, "--record: \(directory) is not empty; give a new or empty folder")
        }
        // Ours alone, whatever the umask or the mode of a folder given empty.
        if chmod(directory, 0o700) != 0 { throw FileErrors.io("--record: cannot make private", directory, errno: errno) }
        index = open(directory + "/" + Recording.indexName, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, Recording.fileMode)
        guard index >= 0 else { throw FileErrors.io("--record: cannot create", directory + "/" + Recording.indexName, errno: errno) }
    }

    deinit { close(index) }

    /// A recording of the request of `url` that starts now.
    func begin(url: String) -> ResponseRecording {
        defer { next += 1 }
        return ResponseRecording(number: next, url: RedactedURL.text(url), recorder: self)
    }

    fileprivate func path(_ number: Int, _ suffix: String) -> String { "\(directory)/\(number).\(suffix)" }

    fileprivate func indexed(_ recording: ResponseRecording, ending: Recording.Ending) {
        let line = "\(recording.number)\t\(ending.rawValue)\t\(recording.url)\n"
        _ = Array(line.utf8).withUnsafeBytes { FileSystem.writeAll(index, $0) }
    }
}

/// One response being recorded: the last header block (a 1xx before it is
/// dropped), and the body bytes the transfer accepted.
final class ResponseRecording {
    let number: Int
    let url: String
    private unowned let recorder: ResponseRecorder
    private var head: [UInt8] = []
    private var body: Int32 = -1
    private var ended = false

    fileprivate init(number: Int, url: String, recorder: ResponseRecorder) {
        self.number = number
        self.url = url
        self.recorder = recorder
    }

    func header(_ line: UnsafeRawBufferPointer) {
        if line.starts(with: Array("HTTP/".utf8)) { head = [] }
        head.append(contentsOf: Recording.keptLine(line))
    }

    func body(_ bytes: UnsafeRawBufferPointer) {
        if body < 0 { body = open(recorder.path(number, "body"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, Recording.fileMode) }
        if body >= 0 { _ = FileSystem.writeAll(body, bytes) }
    }

    /// A chunk the transfer refused when no body byte was taken yet: the
    /// engine decides on a body when its first bytes arrive, so a replay must
    /// offer them to take the same decision. Later refused chunks add nothing.
    func refused(_ bytes: UnsafeRawBufferPointer) {
        guard body < 0, !ended else { return }
        body(bytes)
    }

    /// Writes the head and the index line; once (later calls do nothing).
    func finish(_ ending: Recording.Ending) {
        guard !ended else { return }
        ended = true
        if body >= 0 { close(body) } else {
            close(open(recorder.path(number, "body"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, Recording.fileMode))
        }
        let file = open(recorder.path(number, "head"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, Recording.fileMode)
        if file >= 0 {
            _ = head.withUnsafeBytes { FileSystem.writeAll(file, $0) }
            close(file)
        }
        recorder.indexed(self, ending: ending)
    }

    deinit { finish(.broken) }
}
