import DLPipe
import Dispatch
import Foundation
import Synchronization

/// SIGINT and SIGTERM: the first stops cleanly (transfers stop, part files stay,
/// exit 130); a second SIGINT exits at once.
final class StopSignals: Sendable {
    private let state = Mutex<(stopping: Bool, sources: [DispatchSourceSignal])>((false, []))

    /// Whether a stop has begun (the run's result no longer matters).
    var stopping: Bool { state.withLock { $0.stopping } }

    static func install(engine: DownloadEngine, reporter: any Reporter) -> StopSignals {
        let stopper = StopSignals()
        let queue = DispatchQueue(label: "dlpipe-signals")
        var sources: [DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)  // delivered to the dispatch source instead
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                let first = stopper.state.withLock { state -> Bool in
                    defer { state.stopping = true }
                    return !state.stopping
                }
                guard first else {
                    // The second signal: leave now. Part files are closed by the
                    // kernel; nothing was renamed into place half-written.
                    _exit(130)
                }
                Terminal.error("dlpipe: stopping (part files are kept; press Ctrl-C again to quit at once)")
                Task {
                    await engine.stop()
                    Terminal.error("dlpipe: stopped")
                    reporter.flushBeforeExit()
                    exit(130)
                }
            }
            source.resume()
            sources.append(source)
        }
        stopper.state.withLock { $0.sources = sources }
        return stopper
    }

    /// Parks the caller while the stop task finishes and exits the process.
    func waitForever() async {
        while true { try? await Task.sleep(nanoseconds: 1_000_000_000) }
    }
}
