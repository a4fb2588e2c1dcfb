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
        let now = Self.now()
        model.withLock { m in
            m.meter.record(event, at: now)
            switch event {
            case .response(let d, let r):
                if m.labels[d.id] == nil { m.order.append(d.id) }
                m.labels[d.id] = shownPath.label(d.name ?? r.filename)
            case .retrying:
                if let line = LineReporter.line(for: event, onlyFailures: false, shownPath: shownPath) { m.log.append(line) }
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
            var lines = 0
            for id in m.order.prefix(maxRows) {
                guard let label = m.labels[id], let figures = m.meter.figures(of: id, at: now) else { continue }
                out += bar(label, figures) + "\n"
                lines += 1
            }
            out += Self.totalLine(m.meter.overall(at: now)) + "\n"
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

    private func bar(_ label: String, _ f: ProgressMeter.Figures) -> String {
        let label = String(Terminal.clean(label).prefix(24)).padding(toLength: 24, withPad: " ", startingAt: 0)
        // Room for the label, percent, bytes, speed and ETA on the line.
        let barWidth = max(10, min(40, width - 58))
        var cells = String(repeating: "-", count: barWidth)
        var percent = "   ?"
        if let total = f.total, total > 0 {
            let fraction = min(1, Double(f.bytes) / Double(total))
            let filled = Int(fraction * Double(barWidth))
            cells = String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled)
            percent = String(format: "%3d%%", Int(fraction * 100))
        }
        let eta = f.eta.map { " " + Format.eta($0) } ?? ""
        return "\(label) [\(cells)] \(percent) \(Format.bytes(f.bytes)) \(Format.speed(f.speed))\(eta)"
    }
}
