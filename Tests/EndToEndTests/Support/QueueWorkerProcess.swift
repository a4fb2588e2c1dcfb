import Foundation

extension Subprocess {
    /// Starts `dlpipe ARGUMENTS` as a queue worker whose output the test
    /// reads at the end, with NO_COLOR set (unless `environment` sets it).
    static func queueWorker(_ arguments: [String], environment: [String: String] = [:]) throws -> Subprocess {
        try Subprocess(
            Paths.binary, arguments,
            environment: environment.merging(["NO_COLOR": "1"]) { given, _ in given },
            // The watchdog counts from the spawn; in a full suite on two cores a
            // test's await came back up to 150 s late, so 120 s killed live workers.
            timeout: 300)
    }
}
