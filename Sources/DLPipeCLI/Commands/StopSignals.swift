internal import CPosix
import DLPipe
import Foundation

/// SIGINT and SIGTERM: the first stops cleanly (transfers stop, part files stay,
/// exit 130; a shared queue's worker gives its downloads back to the queue
/// instead); a second one exits at once, however slow the clean stop is.
///
/// The signals are caught by a C handler (Sources/CPosix/dl_stop_signals.h)
/// that counts every delivered signal, so that two in a row are never merged
/// into one (a dispatch signal source merged them, and the second Ctrl-C was
/// lost); the first reaches the stop thread here through a pipe.
final class StopSignals: Sendable {
    /// Whether a stop has begun (the run's result no longer matters).
    var stopping: Bool { dl_stop_signals_received() > 0 }

    /// What the first signal prints: what the clean stop does with what is open.
    static let keepsPartFiles = "dlpipe: stopping (part files are kept; press Ctrl-C again to quit at once)"
    /// A shared queue's worker leaves the job (`QueueWorker.leave`): what it
    /// held goes back to ready for the other workers, and its part files are
    /// removed, since whoever takes a download over starts its own.
    /// `get -o -`: a body on its way to stdout cannot be resumed by a later
    /// run, so its staged copy is removed (`StdoutSink`).
    static let discardsStdoutBody =
        "dlpipe: stopping (the body sent to stdout cannot be resumed: its staged copy is removed; press Ctrl-C again to quit at once)"
    static let givesDownloadsBack =
        "dlpipe: stopping (this worker's downloads go back to the queue for the other workers and its part files are removed; press Ctrl-C again to quit at once)"

    /// `afterStop` runs once the engine stopped, before the exit (a shared
    /// queue's worker gives its downloads back to the others there);
    /// `announce` is the line the first signal prints; `removeOnQuit` are
    /// paths (files, then their folder) that a second signal, which quits at
    /// once, removes on its way out.
    static func install(
        engine: DownloadEngine, reporter: any Reporter, announce: String = keepsPartFiles,
        removeOnQuit: [String] = [], afterStop: @escaping @Sendable () -> Void = {}
    ) -> StopSignals {
        for path in removeOnQuit where dl_stop_signals_remove_on_quit(path) != 0 {
            Terminal.error("dlpipe: a second Ctrl-C would leave \(path) behind (path too long)")
        }
        let descriptor = dl_stop_signals_install()
        if descriptor < 0 {
            Terminal.error("dlpipe: cannot catch SIGINT and SIGTERM: \(String(cString: strerror(errno)))")
        } else {
            let thread = Thread {
                ThreadName.set("dlpipe-stop")
                waitForTheFirstSignal(descriptor, engine: engine, reporter: reporter, announce: announce, afterStop: afterStop)
            }
            thread.start()
        }
        return StopSignals()
    }

    /// Blocks until the first signal, then stops the engine and exits 130. The
    /// second signal does not come here: the C handler exits at once.
    private static func waitForTheFirstSignal(
        _ descriptor: Int32, engine: DownloadEngine, reporter: any Reporter, announce: String,
        afterStop: @escaping @Sendable () -> Void
    ) {
        var byte = UInt8(SIGTERM)
        while read(descriptor, &byte, 1) < 0 && errno == EINTR {}
        // 0: `requestStop`, no signal; its line must not speak of a Ctrl-C.
        Terminal.error(byte == 0 ? requested(announce) : announce)
        Task {
            await engine.stop()
            afterStop()
            Terminal.error("dlpipe: stopped")
            reporter.flushBeforeExit()
            exit(130)
        }
    }

    /// Stops as the first SIGTERM does (its line, the clean stop, exit 130),
    /// for a stop asked through the shared queue; nothing when a signal
    /// already began one. A later Ctrl-C quits at once, as a second signal.
    func requestStop() {
        dl_stop_signals_request()
    }

    /// The first signal's line for a stop that `dlpipe queue stop` asked:
    /// no Ctrl-C came, so none is "again"; a Ctrl-C now quits at once.
    static func requested(_ announce: String) -> String {
        announce.replacingOccurrences(of: "dlpipe: stopping (", with: "dlpipe: stopping as `dlpipe queue stop` asked (")
            .replacingOccurrences(of: "; press Ctrl-C again to quit at once)", with: "; a Ctrl-C quits at once)")
    }

    /// Parks the caller while the stop task finishes and exits the process.
    func waitForever() async {
        while true { try? await Task.sleep(nanoseconds: 1_000_000_000) }
    }
}
