import DLPipe
@preconcurrency import Foundation
import Synchronization

/// Live progress on a terminal: one bar per active download and a total line,
/// redrawn at most 10 times a second on stderr. Finished and failed downloads
/// scroll up above the bars as plain lines.
final class ProgressBars: Reporter, @unchecked Sendable {
    // @unchecked: `timer` is set once in init and only cancelled after; the
    // mutable state is all inside the `model` Mutex.
    private struct Row {
        var label: String
        var bytes: Int64 = 0
        var total: Int64?
        var rate: Double = 0
    }

    private struct Model {
        var rows: [DownloadID: Row] = [:]
        var order: [DownloadID] = []
        /// Lines to print above the bars at the next redraw.
        var log: [String] = []
        var finishedBytes: Int64 = 0
        var done = 0
        var seen = 0
        var dirty = false
        var drawnLines = 0
    }

    private let model = Mutex(Model())
    private let colors: Bool
    private let shownPath: ShownPath
    private let timer: DispatchSourceTimer
    private let width: Int
    /// Bars shown at most; the rest are counted in the total line.
    private let maxRows = 10

    init(colors: Bool, shownPath: ShownPath = .plain) {
        self.colors = colors
        self.shownPath = shownPath
        var size = winsize()
        width = ioctl(2, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 20 ? Int(size.ws_col) : 80
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "dlpipe-bars"))
        timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
        timer.setEventHandler { [unowned self] in
            ThreadName.enter("dlpipe-bars")
            redraw(final: false)
        }
        timer.resume()
    }

    func handle(_ event: DownloadEvent) {
        model.withLock { m in
            switch event {
            case .queued: m.seen += 1
            case .response(let d, let r):
                if m.rows[d.id] == nil { m.order.append(d.id) }
                m.rows[d.id] = Row(label: shownPath.label(d.name ?? r.filename), total: r.length)
            case .progress(let d, let p):
                m.rows[d.id]?.bytes = p.bytes
                m.rows[d.id]?.total = p.total
                m.rows[d.id]?.rate = p.rate
            case .retrying:
                if let line = LineReporter.line(for: event, onlyFailures: false, shownPath: shownPath) { m.log.append(line) }
            default:
                guard event.isTerminal, let d = event.download else { return }
                m.done += 1
                if case .finished(_, let f) = event { m.finishedBytes += f.bytes }
                m.rows[d.id] = nil
                m.order.removeAll { $0 == d.id }
                if let line = LineReporter.line(for: event, onlyFailures: false, shownPath: shownPath) {
                    m.log.append(paint(line, failed: { if case .failed = event { return true }; return false }()))
                }
                if let warning = LineReporter.warning(for: event) { m.log.append(warning) }
            }
            m.dirty = true
        }
    }

    func finish(_ summary: RunSummary) {
        timer.cancel()
        redraw(final: true)
        Terminal.error(LineReporter.summaryLine(summary))
    }

    func runEnded(_ ended: FollowedRun) {
        model.withLock { m in
            m.log.append(ended.line)
            m.dirty = true
        }
    }

    private func paint(_ line: String, failed: Bool) -> String {
        guard colors else { return line }
        return (failed ? "\u{1b}[31m" : "\u{1b}[32m") + line + "\u{1b}[0m"
    }

    private func redraw(final: Bool) {
        var out = ""
        model.withLock { m in
            guard m.dirty || final else { return }
            m.dirty = false
            // Move up over the previous bars and clear them.
            if m.drawnLines > 0 { out += "\u{1b}[\(m.drawnLines)F\u{1b}[J" }
            for line in m.log { out += line + "\n" }
            m.log = []
            guard !final else {
                m.drawnLines = 0
                return
            }
            var lines = 0
            var activeBytes: Int64 = 0
            for id in m.order {
                guard let row = m.rows[id] else { continue }
                activeBytes += row.bytes
                if lines < maxRows {
                    out += bar(row) + "\n"
                    lines += 1
                }
            }
            let rate = m.rows.values.reduce(0) { $0 + $1.rate }
            out += "total: \(m.done)/\(m.seen) done, \(Format.bytes(m.finishedBytes + activeBytes)), \(Format.rate(rate))\n"
            m.drawnLines = lines + 1
        }
        if !out.isEmpty { FileHandle.standardError.write(Data(out.utf8)) }
    }

    private func bar(_ row: Row) -> String {
        let label = String(Terminal.clean(row.label).prefix(24)).padding(toLength: 24, withPad: " ", startingAt: 0)
        let barWidth = max(10, min(40, width - 60))
        var cells = String(repeating: "-", count: barWidth)
        var percent = "   ?"
        if let total = row.total, total > 0 {
            let fraction = min(1, Double(row.bytes) / Double(total))
            let filled = Int(fraction * Double(barWidth))
            cells = String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled)
            percent = String(format: "%3d%%", Int(fraction * 100))
        }
        return "\(label) [\(cells)] \(percent) \(Format.bytes(row.bytes)) \(Format.rate(row.rate))"
    }
}
