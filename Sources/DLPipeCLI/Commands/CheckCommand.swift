import DLPipe
import DLPipeLua

/// `dlpipe check JOB.lua`: loads the job and its hooks with no network.
enum CheckCommand {
    static func run(_ raw: [String]) async throws -> Int32 {
        var args = Arguments(raw, command: "check")
        if args.flag("-h", "--help") {
            print(HelpText.check, terminator: "")
            return ExitCode.ok
        }
        var options = try RunOptions.parse(&args)
        let positionals = try args.positionals()
        guard positionals.count == 1 else { throw UsageError("check wants one job file", command: "check") }
        options.scripts.jobPath = positionals[0]
        options.scripts.readOnlyStore = true
        guard let session = RunDriver.loadScripts(options.scripts, quiet: options.quiet, json: options.json) else { return ExitCode.usage }
        let handlers = session.counts.filter { $0.value > 0 }.sorted { $0.key < $1.key }
            .map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        print("ok: \(session.scripts.joined(separator: ", ")): \(session.queuedAtLoad) download(s) queued; handlers: \(handlers.isEmpty ? "none" : handlers)")
        return ExitCode.ok
    }
}
