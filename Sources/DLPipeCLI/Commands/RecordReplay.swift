import DLPipe
import Foundation

/// `dlpipe run --record DIR` and `--replay DIR`: a job's responses stored,
/// then served again with no network, so that a script author can change a
/// handler and re-run it at will, and a test suite can pin a job's behaviour.
enum RecordReplay {
    /// Sets up recording or replay on `options`; false (after saying why)
    /// when the folder cannot be used.
    static func prepare(_ options: inout RunOptions, record: String?, replay: String?) throws -> Bool {
        if record != nil && replay != nil {
            throw UsageError("--record and --replay: one at a time", command: "run")
        }
        if let record {
            do throws(DownloadError) {
                options.recorder = try ResponseRecorder(directory: record)
            } catch {
                Terminal.error("dlpipe: \(error.message)")
                return false
            }
        }
        guard let replay else { return true }
        if options.state != nil {
            throw UsageError("--replay keeps its state in its own output directory; --state is not used with it", command: "run")
        }
        do throws(DownloadError) {
            options.replay = try ReplayServer(directory: replay)
        } catch {
            Terminal.error("dlpipe: \(error.message)")
            return false
        }
        // Never the real output directory nor its state: a new temporary one
        // unless -d names another (which then holds the replay's state).
        if options.dir == nil {
            var template = Array(((NSTemporaryDirectory() as NSString).appendingPathComponent("dlpipe-replay-XXXXXX")).utf8CString)
            guard let made = mkdtemp(&template) else {
                Terminal.error("dlpipe: --replay: cannot create a temporary output directory: \(String(cString: strerror(errno)))")
                return false
            }
            options.dir = String(cString: made)
        }
        options.scripts.outputDirectory = options.dir
        // Even with -q: where the files went is the point of the run.
        Terminal.error("dlpipe: replaying \(replay) into \(options.dir!)")
        return true
    }
}
