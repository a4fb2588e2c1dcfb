import DLPipe
@preconcurrency import Foundation
import Synchronization

/// Live progress on a terminal: one bar per active download and a total line
/// (docs/cli.md, Output), redrawn on stderr 10 times a second while transfers
/// are in flight (their speeds and ETAs move with time, not only with events),
/// with the figures of a `ProgressMeter`. Finished and failed downloads scroll
/// up above the bars as plain lines.
final class ProgressBars: Reporter, @unchecked Sendable {
    // @unchecked: `timer` is set once in init and only cancelled after; the
    // mutable state is all inside the `model` Mutex.
    private let warnings = RunWarnings()
    private struct Model {
        /// The bars' labels, by download, in the order their responses came.
        var labels: [DownloadID: String] = [:]
        var order: [DownloadID] = []
        /// The figures: files, bytes, speeds and ETAs.
        var meter = ProgressMeter()
        /// Lines to print above the bars at the next redraw.
        var log: [String] = []
        var dirty = false
        var drawnLines = 0
    }

    private let model = Mutex(Model())
    private let colors: Bool
    private let shownPath: ShownPath
    private let timer: DispatchSourceTimer
    /// Bars shown at most (fewer on a short terminal); a line under them
    /// counts the rest.
    private let maxRows = 10

    init(colors: Bool, shownPath: ShownPath = .plain) {
        self.colors = colors
        self.shownPath = shownPath
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "dlpipe-bars"))
        timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
        timer.setEventHandler { [unowned self] in
            ThreadName.enter("dlpipe-bars")
            redraw(final: false)
        }
        timer.resume()
    }

    func handle(_ event: DownloadEvent) {
        let now = Self.now()
        model.withLock { m in
            m.meter.record(event, at: now)
            switch event {
            case .response(let d, let r):
                if m.labels[d.id] == nil { m.order.append(d.id) }
                m.labels[d.id] = shownPath.label(d.name ?? r.filename)
            case .retrying:
                if let line = LineReporter.line(for: event, onlyFailures: false, shownPath: shownPath) { m.log.append(line) }
            case .drained:
                m.log.append(contentsOf: warnings.newLines(in: event))
            default:
                guard event.isTerminal, let d = event.download else { return }
                m.labels[d.id] = nil
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

    /// Seconds on a clock that only goes forward, for the meter.
    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    private func redraw(final: Bool) {
        var out = ""
        let now = Self.now()
        model.withLock { m in
            // Speeds and ETAs move with time: bars in flight are redrawn on every tick.
            guard m.dirty || final || !m.order.isEmpty else { return }
            m.dirty = false
            // Move up over the previous bars and clear them.
            if m.drawnLines > 0 { out += "\u{1b}[\(m.drawnLines)F\u{1b}[J" }
            for line in m.log { out += line + "\n" }
            m.log = []
            guard !final else {
                m.drawnLines = 0
                return
            }
            // The window's size is read on every redraw: a resized terminal
            // gets lines that fit it from the next one on.
            let size = Self.windowSize()
            // Every line fits in the window less its last column: a line that
            // wrapped would take two rows, and moving up over the bars would
            // leave one behind on every redraw.
            let usable = size.columns - 1
            let rows = min(maxRows, max(1, size.rows - 3))
            var lines = 0
            for id in m.order.prefix(rows) {
                guard let label = m.labels[id], let figures = m.meter.figures(of: id, at: now) else { continue }
                out += Self.bar(label, figures, columns: usable) + "\n"
                lines += 1
            }
            if m.order.count > rows {
                out += DisplayWidth.prefix("… and \(m.order.count - rows) more in flight", usable) + "\n"
                lines += 1
            }
            out += DisplayWidth.prefix(Self.totalLine(m.meter.overall(at: now)), usable) + "\n"
            m.drawnLines = lines + 1
        }
        if !out.isEmpty { FileHandle.standardError.write(Data(out.utf8)) }
    }

    /// "total: 2/8 files, 11.4 MiB of 22.9 MiB, 12.0 MiB/s, ETA 1s": the size
    /// only when every file's is known, the ETA only when it can be estimated.
    static func totalLine(_ overall: ProgressMeter.Overall) -> String {
        let f = overall.figures
        var line = "total: \(overall.filesDone)/\(overall.filesTotal) files, \(Format.bytes(f.bytes))"
        if let total = f.total { line += " of \(Format.bytes(total))" }
        line += ", \(Format.speed(f.speed))"
        if let eta = f.eta { line += ", \(Format.eta(eta))" }
        return line
    }

    /// The terminal's columns and rows (80 x 24 when it does not say).
    private static func windowSize() -> (columns: Int, rows: Int) {
        var size = winsize()
        guard ioctl(2, UInt(TIOCGWINSZ), &size) == 0 else { return (80, 24) }
        return (size.ws_col >= 20 ? Int(size.ws_col) : 80, size.ws_row >= 4 ? Int(size.ws_row) : 24)
    }

    /// Columns kept for the figures after a bar, so that every bar of a
    /// redraw has the same width: "100% 1023.9 MiB 1023.9 KiB/s ETA 59m59s".
    private static let figuresRoom = 39

    /// A download's line in at most `columns` columns: its name (cut in the
    /// middle), a bar when there is room for one of 10 cells, and its figures.
    static func bar(_ label: String, _ f: ProgressMeter.Figures, columns: Int) -> String {
        var percent = "   ?"
        var fraction: Double?
        if let total = f.total, total > 0 {
            let done = min(1, Double(f.bytes) / Double(total))
            fraction = done
            percent = String(format: "%3d%%", Int(done * 100))
        }
        let eta = f.eta.map { " " + Format.eta($0) } ?? ""
        let figures = "\(percent) \(Format.bytes(f.bytes)) \(Format.speed(f.speed))\(eta)"
        // A bar of at least 10 cells beside a name of 24 columns; on a
        // narrower terminal no bar, and the name takes what is left.
        let barWidth = min(40, columns - 24 - 4 - figuresRoom)
        guard barWidth >= 10 else {
            let nameWidth = max(8, columns - figuresRoom - 1)
            let name = DisplayWidth.pad(DisplayWidth.middle(Terminal.clean(label), nameWidth), nameWidth)
            return DisplayWidth.prefix(name + " " + figures, columns)
        }
        let name = DisplayWidth.pad(DisplayWidth.middle(Terminal.clean(label), 24), 24)
        let filled = fraction.map { Int($0 * Double(barWidth)) } ?? 0
        let cells = String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled)
        return DisplayWidth.prefix("\(name) [\(cells)] \(figures)", columns)
    }
}
