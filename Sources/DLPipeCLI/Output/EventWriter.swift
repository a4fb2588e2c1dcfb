import DLPipe
import Dispatch
import Foundation
import Synchronization

/// Writes `--json` events to stdout on a thread of its own, so that a reader
/// slower than the downloads (a full pipe) never blocks the engine thread that
/// raises them.
///
/// Events wait in a buffer in the order they came. A download's progress
/// events are coalesced while they wait: a newer one takes the place of the
/// one not yet written (the latest wins), so the buffer holds at most one
/// progress event per download beside the few other events each download has;
/// its memory is bounded by the downloads of the run, not by how long the
/// reader lags.
final class EventWriter: Sendable {
    private enum Entry {
        /// An engine event, and a progress event's figures (`ProgressMeter`).
        case event(DownloadEvent, MeterReading?)
        /// A line that is not an engine event (a script's dl.warn), JSON already.
        case line(String)
        /// Signalled once everything before it is written.
        case marker(DispatchSemaphore)
    }

    private struct Buffer {
        var entries: [Entry] = []
        /// Where each download's unwritten progress event sits in `entries`.
        var progressSlot: [DownloadID: Int] = [:]
    }

    private let buffer = Mutex(Buffer())
    /// Counts wake-ups of the writer thread: signalled when the buffer stops being empty.
    private let wake = DispatchSemaphore(value: 0)
    private let descriptor: Int32

    /// Starts the writer thread for `descriptor` (stdout).
    init(descriptor: Int32 = 1) {
        self.descriptor = descriptor
        let thread = Thread { [self] in
            ThreadName.set("dlpipe-output")
            run()
        }
        thread.start()
    }

    /// Queues an event (a progress event with its `meter` figures, which are
    /// coalesced with it); never blocks on the reader.
    func write(_ event: DownloadEvent, meter: MeterReading? = nil) {
        let wasEmpty = buffer.withLock { buffer -> Bool in
            let wasEmpty = buffer.entries.isEmpty
            if case .progress(let d, _) = event {
                if let slot = buffer.progressSlot[d.id] {
                    buffer.entries[slot] = .event(event, meter)
                    return false
                }
                buffer.progressSlot[d.id] = buffer.entries.count
            } else if let id = event.download?.id {
                // A later progress event must come after this one, not in the
                // place of an earlier one.
                buffer.progressSlot[id] = nil
            }
            buffer.entries.append(.event(event, meter))
            return wasEmpty
        }
        if wasEmpty { wake.signal() }
    }

    /// The writer of the process's stdout: the reporter's events and the
    /// scripts' warnings go through one writer, so their lines never interleave.
    static let standardOutput = EventWriter()

    /// Queues a line that is JSON already; never blocks on the reader.
    func write(line: String) {
        let wasEmpty = buffer.withLock { buffer -> Bool in
            defer { buffer.entries.append(.line(line)) }
            return buffer.entries.isEmpty
        }
        if wasEmpty { wake.signal() }
    }

    /// Waits until every event queued so far is written, or `timeout` passes;
    /// false on the timeout (the reader is not reading).
    @discardableResult
    func drain(timeout: DispatchTime = .distantFuture) -> Bool {
        let done = DispatchSemaphore(value: 0)
        let wasEmpty = buffer.withLock { buffer -> Bool in
            defer { buffer.entries.append(.marker(done)) }
            return buffer.entries.isEmpty
        }
        if wasEmpty { wake.signal() }
        return done.wait(timeout: timeout) == .success
    }

    private func run() {
        var bytes: [UInt8] = []
        while true {
            wake.wait()
            let entries = buffer.withLock { buffer -> [Entry] in
                buffer.progressSlot.removeAll(keepingCapacity: true)
                defer { buffer.entries.removeAll(keepingCapacity: true) }
                return buffer.entries
            }
            // One write per batch: into a regular file that is the batching a
            // file wants, and to a pipe it is as soon as the reader can take it.
            for entry in entries {
                switch entry {
                case .event(let event, let meter):
                    bytes.append(contentsOf: JSONLine.encode(event, meter: meter).utf8)
                    bytes.append(10)
                case .line(let line):
                    bytes.append(contentsOf: line.utf8)
                    bytes.append(10)
                case .marker(let done):
                    flush(&bytes)
                    done.signal()
                }
            }
            flush(&bytes)
        }
    }

    private func flush(_ bytes: inout [UInt8]) {
        guard !bytes.isEmpty else { return }
        // A reader that is gone can be told nothing more: the bytes are dropped.
        _ = bytes.withUnsafeBytes { FileSystemOut.writeAll(descriptor, $0) }
        bytes.removeAll(keepingCapacity: true)
    }
}
