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
        let early = try queue.resolve(environment: environment, job: nil)
        if early == nil {
            // Queue options with no queue named yet: only the job can still
            // name one, before its first effect (HeldUsageError).
            options.scripts.usageUnlessJobNamesQueue = queue.withoutQueue
        }
        try queue.refuse(statePath: options.state, environment: environment, job: nil)
        guard try RecordReplay.prepare(&options, record: record, replay: replay) else { return ExitCode.usage }
        // The ids of the job's top-level adds depend on it (ProvisionalIDs).
        options.scripts.sharedQueue = queue.optedOut ? false : early != nil ? true : nil
        if let (address, name) = early {
            // The job's top level may read dl.store: from the queue's database,
            // which must answer before any script runs.
            if let failure = QueueMode.reachable(address) {
                Terminal.error("dlpipe: \(failure.message)")
                return failure.code
            }
            options.scripts.storeState = QueueMode.store(address, name: name)
            options.scripts.storeStateNamespace = QueueMode.storeNamespace(name)
        }
        guard let session = RunDriver.loadScripts(options.scripts, quiet: options.quiet, json: options.json) else { return ExitCode.usage }
        try queue.refuse(statePath: options.state, environment: environment, job: session.settings)
        let setup = try queue.resolve(environment: environment, job: session.settings).map { address, name in
            QueueSetup(
                address: address, name: name, lease: queue.lease, settle: queue.settle, follow: queue.follow,
                givesPerHost: options.perHost != nil || session.settings.perHost != nil,
                givesHostDelay: options.hostDelay != nil || session.settings.hostDelay != nil,
                maxDownloads: session.settings.maxDownloads)
        }
        if let setup, early == nil {
            // Named by dl.config{ queue }: dl.store lives there from now on.
            session.useStore(QueueMode.store(setup.address, name: setup.name), namespace: QueueMode.storeNamespace(setup.name))
        }
        if setup == nil, let problem = queue.withoutQueue {
            throw UsageError(problem, command: "run")
        }
        return await RunDriver.run(options: options, session: session, requests: [], queue: setup)
    }
}
