import DLPipe
import DLPipeLua
import Foundation

/// `dlpipe run JOB.lua [options]`: a job file and its hooks drive the engine.
enum RunCommand {
    static func run(_ raw: [String]) async throws -> Int32 {
        var args = Arguments(raw, command: "run")
        if args.flag("-h", "--help") {
            print(HelpText.run, terminator: "")
            return ExitCode.ok
        }
        let record = try args.value("--record")
        let replay = try args.value("--replay")
        var options = try RunOptions.parse(&args)
        let queue = try QueueArguments.take(&args, worker: true)
        let positionals = try args.positionals()
        guard positionals.count == 1 else {
            throw UsageError(positionals.isEmpty ? "no job file given" : "one job file at a time, got \(positionals.count)", command: "run")
        }
        options.scripts.jobPath = positionals[0]
        let environment = ProcessInfo.processInfo.environment
        _ = try queue.resolve(environment: environment, job: nil)
        guard try RecordReplay.prepare(&options, record: record, replay: replay) else { return ExitCode.usage }
        guard let session = RunDriver.loadScripts(options.scripts, quiet: options.quiet, json: options.json) else { return ExitCode.usage }
        let setup = try queue.resolve(environment: environment, job: session.settings).map { address, name in
            QueueSetup(address: address, name: name, lease: queue.lease, settle: queue.settle)
        }
        if setup == nil, queue.lease != nil || queue.settle != nil {
            throw UsageError("--lease and --settle are settings of a shared queue; give the queue too (--queue URL)", command: "run")
        }
        return await RunDriver.run(options: options, session: session, requests: [], queue: setup)
    }
}
