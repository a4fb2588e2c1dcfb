import DLPipe
import Foundation

/// One plain line on stderr per terminal event, no escape codes (for logs and cron).
final class LineReporter: Reporter {
    let onlyFailures: Bool
    let shownPath: ShownPath
    private let warnings = RunWarnings()
    init(onlyFailures: Bool, shownPath: ShownPath = .plain) {
        self.onlyFailures = onlyFailures
        self.shownPath = shownPath
    }

    func handle(_ event: DownloadEvent) {
        // Shown under -q too, as dl.warn lines are.
        if let warning = Self.warning(for: event) { Terminal.error(warning) }
        for line in warnings.newLines(in: event) { Terminal.error(line) }
        guard let line = Self.line(for: event, onlyFailures: onlyFailures, shownPath: shownPath) else { return }
        Terminal.error(line)
    }

    /// The warning line an event carries (a new version beside a file the
    /// user changed), if any.
    static func warning(for event: DownloadEvent) -> String? {
        guard case .finished(let d, let f) = event, let warning = f.warning else { return nil }
        return "dlpipe: warning: \(Terminal.clean(warning)) [\(d.id)]"
    }

    func finish(_ summary: RunSummary) {
        guard !onlyFailures else { return }
        Terminal.error(Self.summaryLine(summary))
    }

    func runEnded(_ ended: FollowedRun) {
        guard !onlyFailures else { return }
        Terminal.error(ended.line)
    }

    /// The line for a terminal event (nil for the others).
    static func line(for event: DownloadEvent, onlyFailures: Bool, shownPath: ShownPath = .plain) -> String? {
        switch event {
        case .finished(let d, let f) where !onlyFailures:
            // A memory download has no path: its URL names it.
            let what = f.body == nil ? shownPath.text(f.path) : "\(Terminal.clean(RedactedURL.text(d.url))) into memory"
            // An unchanged file moved no body: no rate, which would be made up.
            if f.unchanged { return "unchanged \(what) (\(Format.bytes(f.bytes)) on disk, \(f.checkedWords)) [\(d.id)]" }
            let rate = f.seconds > 0 ? ", " + Format.rate(Double(f.bytes) / f.seconds) : ""
            return "finished \(what) (\(Format.bytes(f.bytes)) in \(Format.seconds(f.seconds))\(rate)) [\(d.id)]"
        case .failed(let d, let e):
            // The id and kind end the first line; a traceback follows, indented.
            let (message, traceback) = Terminal.cleanLinesSplit(FailureText.withoutOwnURL(e.message, url: RedactedURL.text(d.url)))
            return "failed \(Terminal.clean(RedactedURL.text(d.url))): \(message) [\(d.id), \(e.kind.rawValue)]\(traceback)"
        case .handled(let d, let e) where !onlyFailures:
            // A failure a handler dealt with (a fallback): not a failure of the run.
            let (message, traceback) = Terminal.cleanLinesSplit(FailureText.withoutOwnURL(e.message, url: RedactedURL.text(d.url)))
            return "handled \(Terminal.clean(RedactedURL.text(d.url))): \(message) [\(d.id), \(e.kind.rawValue)]\(traceback)"
        case .skipped(let d, let reason) where !onlyFailures:
            return "skipped \(Terminal.clean(RedactedURL.text(d.url))): \(Terminal.clean(reason)) [\(d.id)]"
        case .cancelled(let d) where !onlyFailures:
            return "cancelled \(Terminal.clean(RedactedURL.text(d.url))) [\(d.id)]"
        case .retrying(let d, let e, let delay) where !onlyFailures:
            let (message, more) = Terminal.cleanLinesSplit(FailureText.withoutOwnURL(e.message, url: RedactedURL.text(d.url)))
            return "retrying \(Terminal.clean(RedactedURL.text(d.url))) in \(Format.seconds(delay)): \(message) [\(d.id)]\(more)"
        default:
            return nil
        }
    }

    static func summaryLine(_ s: RunSummary) -> String {
        var parts = ["\(s.finished) finished"]
        if s.unchanged > 0 { parts.append("\(s.unchanged) unchanged") }
        // --verify: how many kept files were hashed again, and how many of them came again.
        if s.verified > 0 { parts.append("\(s.verified) verified" + (s.replaced > 0 ? " (\(s.replaced) replaced)" : "")) }
        if s.failed > 0 { parts.append("\(s.failed) failed") }
        if s.handled > 0 { parts.append("\(s.handled) handled") }
        if s.skipped > 0 { parts.append("\(s.skipped) skipped") }
        if s.cancelled > 0 { parts.append("\(s.cancelled) cancelled") }
        return "dlpipe: " + parts.joined(separator: ", ")
            + " (\(Format.bytes(s.bytes)) in \(Format.seconds(s.seconds)))"
    }
}

extension FinishedInfo {
    /// What a kept file was checked by: `validators`, `validators and
    /// content` (`--verify`), `content` (`--verify` under refresh "never"),
    /// or `nothing` (refresh "never" alone).
    var checkedBy: String {
        switch (askedServer, contentVerified) {
        case (true, true): return "validators and content"
        case (true, false): return "validators"
        case (false, true): return "content"
        case (false, false): return "nothing"
        }
    }

    /// The unchanged line's words: "validators checked in 0.1s", or "kept
    /// without a request".
    var checkedWords: String {
        checkedBy == "nothing" ? "kept without a request" : "\(checkedBy) checked in \(Format.seconds(seconds))"
    }
}
