import Foundation

/// A trace of how a drain is asked and answered, on stderr, for finding why
/// a queue worker's run does not end (docs/architecture.md, "A run that does not end"). Off unless the
/// environment sets `DLPIPE_TRACE_DRAIN`; off, a call costs one load of a flag.
package enum DrainTrace {
    package static let enabled = ProcessInfo.processInfo.environment["DLPIPE_TRACE_DRAIN"] != nil

    package static func note(_ line: @autoclosure () -> String) {
        guard enabled else { return }
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let text = String(format: "drain %d.%06d [%@] ", Int(ts.tv_sec), Int(ts.tv_nsec / 1000), Thread.current.name ?? "?")
            + line() + "\n"
        FileHandle.standardError.write(Data(text.utf8))
    }
}
