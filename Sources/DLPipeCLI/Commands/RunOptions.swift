import DLPipe
import DLPipeLua
import Foundation

/// The options `run` and `get` share (SPEC 2). Values are nil when not given, so
/// a job's `dl.config` fills them and the command line wins.
struct RunOptions {
    var dir: String?
    var concurrency: Int?
    var perHost: Int?
    var retries: Int?
    var timeout: Double?
    var rate: Int?
    var json = false
    var quiet = false
    var progress = ProgressMode.auto
    var waitLock = false
    var state: String?
    var caFile: String?
    var scripts = ScriptOptions()
    /// `get -o /folder/name`: the folder the file goes to (the engine's root);
    /// the state and the lock stay those of the output directory.
    var fileFolder: String?
    /// `get -o -`: the body goes to stdout through a staging folder; no state,
    /// no lock (nothing of the output directory is touched).
    var stdout: StdoutSink?

    /// Takes the shared options out of `args`.
    static func parse(_ args: inout Arguments) throws -> RunOptions {
        var options = RunOptions()
        let command = args.command
        options.dir = try args.value("-d", "--dir")
        options.concurrency = try args.int("-j", "--concurrency", in: 1...1000)
        options.perHost = try args.int("--per-host", in: 1...1000)
        options.retries = try args.int("--retries", in: 0...100)
        if let text = try args.value("--timeout") {
            guard let seconds = Double(text), seconds > 0, seconds <= 86400 else {
                throw UsageError("--timeout wants seconds above 0, not \(text.debugDescription)", command: command)
            }
            options.timeout = seconds
        }
        if let text = try args.value("--rate") {
            guard let rate = ByteRate.parse(text) else {
                throw UsageError("--rate wants bytes per second like 500K or 2M, not \(text.debugDescription)", command: command)
            }
            options.rate = rate
        }
        options.json = args.flag("--json")
        options.waitLock = args.flag("--wait-lock")
        options.state = try StateOption.take(&args)
        if let caFile = try args.value("--cacert") {
            // Checked now: curl would only say so per transfer, once per download.
            guard FileManager.default.isReadableFile(atPath: caFile) else {
                throw UsageError("--cacert: cannot read \(caFile.debugDescription)", command: command)
            }
            options.caFile = caFile
        }
        options.scripts.statePath = options.state
        options.scripts.outputDirectory = options.dir
        options.quiet = args.flag("-q", "--quiet")
        let progressText = try args.value("--progress") ?? "auto"
        guard let progress = ProgressMode(rawValue: progressText) else {
            throw UsageError("--progress wants auto, bars, lines or none, not \(progressText.debugDescription)", command: command)
        }
        options.progress = progress
        for pair in try args.values("--var") {
            guard let eq = pair.firstIndex(of: "="), eq != pair.startIndex else {
                throw UsageError("--var wants NAME=VALUE, not \(pair.debugDescription)", command: command)
            }
            options.scripts.vars[String(pair[..<eq])] = String(pair[pair.index(after: eq)...])
        }
        options.scripts.hookDirectories = try args.values("--hooks")
        options.scripts.hookFiles = try args.values("--hook")
        options.scripts.defaultHooks = !args.flag("--no-hooks")
        options.scripts.unsafe = args.flag("--unsafe-lua")
        return options
    }

    /// The engine's settings: defaults, then the job's `dl.config`, then the command line.
    func configuration(job: JobSettings?) -> EngineConfiguration {
        var config = EngineConfiguration()
        config.directory = dir ?? job?.dir ?? config.directory
        config.concurrency = concurrency ?? job?.concurrency ?? config.concurrency
        config.perHost = perHost ?? job?.perHost ?? config.perHost
        config.retries = retries ?? job?.retries ?? config.retries
        config.timeout = timeout ?? job?.timeout ?? config.timeout
        config.rateLimit = rate ?? job?.rate
        config.endPausedWhenDrained = true
        config.caFile = caFile
        config.keepsOutcomes = false  // output comes from events; a long queue stays small
        // A URL listed twice is fetched once, even when the first has ended.
        config.deduplicatesWholeRun = true
        config.statePath = state ?? config.directory + "/.dlpipe/state.db"
        if let fileFolder { config.directory = fileFolder }
        if let stdout {
            config.directory = stdout.folder
            config.statePath = nil
        }
        config.refresh = job?.refresh.flatMap(RefreshPolicy.init(rawValue:)) ?? .conditional
        return config
    }

    /// Whether any Lua script is involved.
    var usesScripts: Bool { scripts.jobPath != nil || !scripts.hookFiles.isEmpty || !scripts.hookDirectories.isEmpty }
}

/// Runs an engine to the end with the options' output, and returns the exit status.
enum RunDriver {
    /// `requests` is read once, as the downloads are queued: a lazy sequence
    /// keeps 100,000 requests from existing twice (here and in the engine).
    static func run(options: RunOptions, session: ScriptSession?, requests: some Sequence<DownloadRequest>) async -> Int32 {
        let configuration = options.configuration(job: session?.settings)
        let lock: RunLock?
        do throws(RunLock.Failure) {
            // One run at a time per output directory, or per state file when the
            // state lives elsewhere (two directories may share one). The lock
            // sits beside the state, wherever `-o` puts the file.
            let path = options.state.map { $0 + ".lock" }
                ?? configuration.statePath.map { ($0 as NSString).deletingLastPathComponent + "/lock" }
            if let path { lock = try RunLock(path: path, wait: options.waitLock) } else { lock = nil }
        } catch {
            switch error {
            case .held(let pid, let path):
                let holder = pid.map { "process \($0)" } ?? "another process"
                Terminal.error("dlpipe: \(holder) is running in \(configuration.directory) (lock \(path)); use --wait-lock to wait for it")
            case .io(let message):
                Terminal.error("dlpipe: \(message)")
                return ExitCode.failed
            }
            return ExitCode.locked
        }
        defer { withExtendedLifetime(lock) {} }
        let engine: DownloadEngine
        do {
            let hooks = session?.hooks(report: { Terminal.error("dlpipe: " + Terminal.cleanLines($0)) })
            engine = try DownloadEngine(configuration: configuration, hooks: hooks)
        } catch {
            Terminal.error("dlpipe: \(error.message)")
            return ExitCode.failed
        }
        let reporter = Reporters.make(
            progress: options.progress, json: options.json, quiet: options.quiet,
            // The engine's paths are under the folder's canonical path.
            shownPath: ShownPath(stdoutFolder: options.stdout.map { TargetPath.canonical($0.folder) ?? $0.folder }))
        engine.observe { event in
            // A stop (Ctrl-C) ends the open downloads with `stopped` events; the
            // command line reports the stop itself and exits 130, as before.
            if case .stopped = event { return }
            reporter.handle(event)
        }
        options.stdout?.start(engine: engine)
        let stopper = StopSignals.install(engine: engine, reporter: reporter)
        session?.start(with: engine)
        for request in requests { engine.add(request) }
        let (summary, hookCode) = await engine.waitUntilDrained()
        // A stop does not wait for the Lua thread (a handler may still run): a
        // removed download's record then stays, and its missing file is fetched again.
        if !stopper.stopping { session?.finish() }
        if stopper.stopping { await stopper.waitForever() }
        options.stdout?.finish()
        reporter.finish(summary)
        engine.shutdown()
        if let failure = options.stdout?.failure {
            Terminal.error("dlpipe: -o -: \(failure)")
            return ExitCode.failed
        }
        // An exit status is one byte: a done handler's code is kept within 0...255.
        if let hookCode { return Int32(min(255, max(0, hookCode))) }
        return summary.failed > 0 ? ExitCode.failed : ExitCode.ok
    }

    /// Loads the scripts, or prints why they cannot load (exit 2 follows).
    static func loadScripts(_ options: ScriptOptions) -> ScriptSession? {
        do {
            return try ScriptSession(options, log: { Terminal.error($0) })
        } catch {
            Terminal.error(Terminal.cleanLines(error.message))
            return nil
        }
    }
}
