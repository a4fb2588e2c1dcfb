import DLPipe
import Dispatch
import Foundation
import Synchronization

/// `get -o -`: the body goes to stdout as it arrives.
///
/// The engine writes files, so the body is staged in a private folder (under
/// `$TMPDIR`, else /var/tmp, removed at the end) and a thread of its own copies
/// it to stdout as the part file grows, from a descriptor opened once: the
/// engine's rename of the part file into place does not disturb it, and a
/// reader slower than the download never blocks the engine. A body that
/// arrives whole in memory has no part file; it is copied when it is placed.
///
/// A stream cannot take back what it wrote: once the body has begun, a
/// transfer that breaks is not resumed or restarted (as curl does) but fails
/// the run (exit 1). For the same reason nothing of the staging folder is worth
/// keeping: it is removed on every way out (`discard`), a stop by a signal and
/// a closed stdout included. A reader that closes stdout (`| head`) stops the
/// run with one line and exit 1, as curl's exit 23, instead of SIGPIPE's
/// silent 141.
final class StdoutSink: Sendable {
    /// The name of the staged file.
    static let bodyName = "body"
    /// The private staging folder (the engine's output directory).
    let folder: String

    private struct Progress {
        var bodyStarted = false
        /// The part file or placed file, once open.
        var fd: Int32 = -1
        /// The path to copy from once the body is placed.
        var placed: String?
        /// Set when nothing more will come (finished, failed, cancelled, skipped).
        var ended = false
        var failure: String?
        /// Set when stdout refused a write (`failure` says why).
        var stdoutClosed = false
        var engine: DownloadEngine?
    }

    private let progress = Mutex(Progress())
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    /// Makes the staging folder.
    init() throws {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/var/tmp"
        var template = Array((base + "/dlpipe-stdout-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw UsageError("-o -: cannot make a staging folder in \(base): \(String(cString: strerror(errno)))", command: "get")
        }
        folder = String(cString: made)
    }

    /// Why the stream failed, if it did (exit 1).
    var failure: String? { progress.withLock { $0.failure } }

    /// Whether stdout refused the body (the run was stopped for it).
    var stdoutClosed: Bool { progress.withLock { $0.stdoutClosed } }

    /// The files the engine may leave in the staging folder, and the folder
    /// last: what a second Ctrl-C, which quits at once, removes from its signal
    /// handler (which cannot list a folder).
    var stagedPaths: [String] {
        [folder + "/" + Self.bodyName + ".part", folder + "/" + Self.bodyName, folder]
    }

    /// Removes the staging folder and what it holds; safe to call again.
    func discard() {
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Starts copying; `engine` is told to cancel a broken stream, and stopped
    /// when stdout is closed.
    func start(engine: DownloadEngine) {
        // A closed stdout must be a write error here, not a signal that kills
        // the process before it can remove the staging folder and say why.
        signal(SIGPIPE, SIG_IGN)
        progress.withLock { $0.engine = engine }
        let thread = Thread { [self] in
            ThreadName.set("dlpipe-stdout")
            copyLoop()
        }
        thread.start()
        engine.observe { [self] event in handle(event, engine: engine) }
    }

    /// Runs on the engine thread: quick, never blocks on stdout.
    private func handle(_ event: DownloadEvent, engine: DownloadEngine) {
        switch event {
        case .response:
            progress.withLock { $0.bodyStarted = true }
        case .retrying(let d, let error, _):
            let broken = progress.withLock { state -> Bool in
                guard state.bodyStarted, !state.ended else { return false }
                state.ended = true
                state.failure = "the transfer broke after its body began to go to stdout (\(error.message)); a stream is not resumed"
                return true
            }
            if broken { engine.cancel(d.id) }
        case .finished(_, let f):
            progress.withLock { $0.placed = f.path; $0.ended = true }
        case .failed, .handled, .cancelled, .skipped:
            progress.withLock { $0.ended = true }
        default:
            return
        }
        wake.signal()
    }

    /// Waits until everything is copied, then removes the staging folder.
    func finish() {
        wake.signal()
        done.wait()
        discard()
    }

    private func copyLoop() {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var fd: Int32 = -1
        while true {
            let (ended, placed, failed) = progress.withLock { ($0.ended, $0.placed, $0.failure != nil) }
            if failed { break }
            if fd < 0 {
                // The part file while the body streams; the file itself once placed.
                let path = placed ?? folder + "/" + Self.bodyName + ".part"
                fd = open(path, O_RDONLY | O_CLOEXEC)
            }
            if fd >= 0 { copyAvailable(from: fd, buffer: &buffer) }
            if ended && (fd >= 0 || placed == nil) {
                if fd >= 0 { copyAvailable(from: fd, buffer: &buffer) }
                break
            }
            // Woken by each event; between events the part file grows, so look
            // again soon.
            _ = wake.wait(timeout: .now() + .milliseconds(20))
        }
        if fd >= 0 { close(fd) }
        done.signal()
    }

    /// Copies what the file holds past what was copied, until the stream
    /// breaks: the flag is set (on the engine thread, in the `retrying` event)
    /// before a retry can append a byte, so checking it before each read keeps
    /// every byte of another attempt off stdout.
    private func copyAvailable(from fd: Int32, buffer: inout [UInt8]) {
        while progress.withLock({ $0.failure == nil }) {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            let written = buffer.withUnsafeBytes { FileSystemOut.writeAll(1, UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            guard written else { return refused(errno: errno) }
        }
    }

    /// stdout took no more: the run stops (nothing else can be done with the
    /// body), and `RunDriver` says why in one line.
    private func refused(errno code: Int32) {
        let engine = progress.withLock { state -> DownloadEngine? in
            guard state.failure == nil else { return nil }
            state.stdoutClosed = true
            state.failure = code == EPIPE
                ? "stdout was closed before the body ended (nothing reads it any more); the download stops"
                : "cannot write the body to stdout: \(String(cString: strerror(code))); the download stops"
            return state.engine
        }
        engine?.shutdown()
    }
}

/// Writing whole buffers to a descriptor.
enum FileSystemOut {
    /// Writes all of `bytes` (short writes and EINTR go on); false when refused.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            done += n
        }
        return true
    }
}
