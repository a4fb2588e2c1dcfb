import DLPipe
import DLPipeQueue
import Foundation

/// How progress is shown (`--progress`).
enum ProgressMode: String {
    case auto, bars, lines, none
}

/// Turns engine events into output. `handle` runs on the engine thread: be quick.
protocol Reporter: Sendable {
    func handle(_ event: DownloadEvent)
    func finish(_ summary: RunSummary)
    /// The run is stopping (a signal): write what is pending, within a few seconds.
    func flushBeforeExit()
    /// A `--follow` worker's run ended (`FollowedRun`); it goes on.
    func runEnded(_ ended: FollowedRun)
}

extension Reporter {
    func flushBeforeExit() {}
    func runEnded(_ ended: FollowedRun) {}
}

enum Reporters {
    /// The reporter for the options: JSON Lines, live bars, plain lines, or quiet.
    /// `shownPath` tells how files are named (`get -o -`: stdout).
    static func make(progress: ProgressMode, json: Bool, quiet: Bool, shownPath: ShownPath = .plain) -> any Reporter {
        if json { return JSONReporter() }
        let mode = progress == .auto ? (Terminal.stderrIsTerminal ? .bars : .lines) : progress
        switch mode {
        case .bars where !quiet: return ProgressBars(colors: Terminal.colors, shownPath: shownPath)
        case .none: return LineReporter(onlyFailures: true, shownPath: shownPath)
        default: return LineReporter(onlyFailures: quiet, shownPath: shownPath)
        }
    }
}
