import DLPipe
import DLPipeQueue
import Foundation

/// Where the scripts of a run come from, and their limits (SPEC 1.3, 5).
public struct ScriptOptions: Sendable {
    /// The job file; nil for `dlpipe get --hook FILE`.
    public var jobPath: String?
    /// `--hooks DIR`, in order.
    public var hookDirectories: [String] = []
    /// `--hook FILE`, in order.
    public var hookFiles: [String] = []
    /// Load `hooks.d/` beside the job file when it exists (`--no-hooks` turns it off).
    public var defaultHooks = true
    /// `--unsafe-lua`: the full standard library.
    public var unsafe = false
    /// `--var NAME=VALUE`.
    public var vars: [String: String] = [:]
    /// `--allow-env NAME`: environment variables every script's `os.getenv` may read (no
    /// other is answered; the job may allow more for itself with `dl.config{ env = ... }`).
    public var allowedEnvironment: [String] = []
    /// The Lua state's memory cap.
    public var memoryLimit = 256 << 20
    /// Seconds each handler call may run; nil for the job's `dl.config{budget=}` or 2.
    public var budget: Double?
    /// `--state FILE`, for `dl.store`.
    public var statePath: String?
    /// `-d DIR`, for `dl.store` before the run starts.
    public var outputDirectory: String?
    /// `dlpipe check`: `dl.store.set` changes nothing on disk.
    public var readOnlyStore = false
    /// Where `dl.store` (and the record of files scripts write) lives when it
    /// is not the SQLite state: a shared queue's database. Made at first use,
    /// on the Lua thread (a connection of its own).
    package var storeState: (@Sendable () throws(StateFailure) -> any DownloadState)?
    /// The namespace of `dl.store` in `storeState`: a shared queue's job
    /// name (`--name`), so that workers whose job files are named apart
    /// share one store. Nil: the job file's base name (`JobStore`).
    package var storeStateNamespace: String?
    /// Whether the run is a shared queue's worker, as the command line said
    /// (true: `--queue` or `DLPIPE_QUEUE`; false: `--no-queue`); nil when the
    /// job's `dl.config{ queue }` decides. Top-level ids depend on it (ProvisionalIDs).
    package var sharedQueue: Bool?
    /// A usage error of the command line that stands unless the job names its
    /// queue (`dl.config{ queue }`) before its first effect (HeldUsageError).
    package var usageUnlessJobNamesQueue: String?

    public init() {}

    /// The hook scripts to load, in load order: each directory's `*.lua` by file
    /// name, then the single files.
    public func hookScripts() throws(ScriptError) -> [String] {
        var directories = hookDirectories
        if defaultHooks, let jobPath {
            let beside = (jobPath as NSString).deletingLastPathComponent
            let dir = (beside.isEmpty ? "." : beside) + "/hooks.d"
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: dir, isDirectory: &isDirectory), isDirectory.boolValue {
                directories.insert(dir, at: 0)
            }
        }
        var scripts: [String] = []
        for dir in directories {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else {
                throw ScriptError("\(dir): cannot read the hooks directory")
            }
            scripts += names.filter { $0.hasSuffix(".lua") && !$0.hasPrefix(".") }.sorted().map { dir + "/" + $0 }
        }
        return scripts + hookFiles
    }
}

/// The scripts of one run, loaded into one Lua state on a thread of its own.
public final class ScriptSession: @unchecked Sendable {
    // @unchecked: `host` is touched only on `thread`; `settings`, `counts` and
    // `scripts` are set before init returns.
    private let thread: LuaThread
    private let host: ScriptHost
    /// What `dl.config` set.
    public let settings: JobSettings
    /// Handlers per event name.
    public let counts: [String: Int]
    /// The files loaded, job first.
    public let scripts: [String]
    /// Downloads the scripts added at their top level.
    public let queuedAtLoad: Int
    /// Gives up on handlers stuck past their budget (HandlerBackstop).
    private let backstop: HandlerBackstop

    /// Loads the job and its hooks. A script that fails to load throws
    /// `file:line: message`, before any request is made.
    /// `log` takes dl.log's and print's lines; `warn` takes dl.warn's (without
    /// it they go to `log`, marked `warning:`).
    public init(_ options: ScriptOptions, log: @escaping @Sendable (String) -> Void,
                warn: (@Sendable (ScriptLine) -> Void)? = nil) throws(ScriptError) {
        let thread = LuaThread()
        let hookScripts = try options.hookScripts()
        let result: Result<(ScriptHost, JobSettings, [String: Int], Int), ScriptError> = thread.sync {
            do throws(ScriptError) {
                let budget = options.budget ?? 2
                let host = try ScriptHost(unsafe: options.unsafe, memoryLimit: options.memoryLimit,
                                          budget: budget, vars: options.vars,
                                          allowedEnvironment: options.allowedEnvironment, log: log, warn: warn)
                host.statePath = options.statePath
                host.stateDirectory = options.outputDirectory
                host.readOnlyStore = options.readOnlyStore
                host.storeState = options.storeState
                host.storeStateNamespace = options.storeStateNamespace
                host.provisional.commandLine = options.sharedQueue
                host.storeNamespace = options.jobPath.map(JobStore.namespace(ofJob:)) ?? JobStore.getNamespace
                host.heldUsage.message = options.usageUnlessJobNamesQueue
                // Every file's static problems at once, before any top level
                // runs: one `check` shows them all, the hooks' too.
                let files = (options.jobPath.map { [($0, true)] } ?? []) + hookScripts.map { ($0, false) }
                var problems: [String] = []
                for (path, isJob) in files {
                    problems += try host.staticProblems(path: path, displayName: path, isJob: isJob)
                }
                if !problems.isEmpty { throw ScriptError(problems: problems) }
                if let job = options.jobPath {
                    do throws(ScriptError) {
                        try host.load(path: job, displayName: job, isJob: true)
                    } catch {
                        // The held usage error, raised at the job's first effect, is what
                        // went wrong; any other load error (a bad queue address) is the job's.
                        if let usage = host.heldUsage.raised { throw ScriptError(usage: usage) }
                        throw error
                    }
                    if let usage = host.heldUsage.verdict { throw ScriptError(usage: usage) }
                }
                let settings = try JobSettings(host.config())
                if options.budget == nil, let jobBudget = settings.budget { host.budget = jobBudget }
                if let limit = settings.maxDownloads { host.maxDownloads = limit }
                if let limit = settings.maxDone { host.maxDone = limit }
                for script in hookScripts {
                    try host.load(path: script, displayName: script, isJob: false)
                }
                return .success((host, settings, try host.handlerCounts(), host.topLevel?.count ?? 0))
            } catch {
                return .failure(error)
            }
        }
        let (host, settings, counts, queued) = try result.get()
        self.thread = thread
        self.host = host
        self.settings = settings
        self.counts = counts
        self.queuedAtLoad = queued
        self.backstop = HandlerBackstop(monitor: host.runtime.monitor)
        self.scripts = (options.jobPath.map { [$0] } ?? []) + hookScripts
    }

    /// The engine's hooks: the Lua handlers.
    public func hooks(report: @escaping @Sendable (String) -> Void) -> DownloadHooks {
        LuaHooks(host: host, thread: thread, counts: counts, backstop: backstop, report: report).downloadHooks
    }

    /// What to do when a handler stuck past its budget has not returned long after its
    /// download was failed without it: every later event waits for it, so the command line
    /// ends the run early (a clean stop, exit 1). `action` gets a message naming the script's
    /// line and the call it is stuck in.
    public func whenStuck(_ action: @escaping @Sendable (String) -> Void) {
        backstop.whenStuck(action)
    }

    /// Connects the scripts to the running engine and queues what they added at load.
    public func start(with engine: DownloadEngine) {
        _ = thread.sync { [host, scripts] in
            host.engine = engine
            host.root = engine.directory
            // All at once: a download added first must not start before one of
            // a higher priority added after it is even queued.
            guard let topLevel = host.topLevel else { return true }
            let ids = engine.addTopLevel(contentsOf: topLevel.requests())
            // A shared queue numbers downloads by its rows: the ids a job saw
            // at load are its own then (docs/scale-out.md says so).
            for (index, id) in ids.enumerated() where !engine.isShared {
                precondition(id.rawValue == index + 1, "ids of downloads added at load must match")
            }
            // A provisional id names its row from now on (dl.cancel, dl.pause, dl.resume).
            if engine.isShared { host.provisional.queued(ids.map(\.rawValue)) }
            // A shared queue's run that queued its max_downloads already (by
            // other workers' adds) refuses the rest: id 0.
            let refused = ids.filter { $0.rawValue == 0 }.count
            // Said of the job's top level as a whole: which add came too late
            // is not kept (its adds went to the queue together, at the start).
            let jobPlace = scripts.first ?? "top level"
            if engine.isShared && refused > 0 {
                host.report(ScriptLine(place: jobPlace, download: nil, text: "\(refused) of the downloads added at load were not queued: the job's run already queued its max_downloads (dl.config{ max_downloads = N }), counted over every worker"))
            }
            if let failure = topLevel.readFailure {
                host.report(ScriptLine(place: jobPlace, download: nil, text: "\(failure.message); \(topLevel.count - ids.count) of the downloads added at load were not queued"))
            }
            // The command line's engine keeps the job's rule for these keys itself.
            if engine.deduplicatesWholeRun { host.dropTopLevel() }
            return true
        }
    }
}

extension ScriptSession {
    /// `dl.store` lives in `make`'s state from now on (a queue named by the
    /// job's `dl.config{ queue }`, known only after the job loaded).
    package func useStore(_ make: @escaping @Sendable () throws(StateFailure) -> any DownloadState, namespace: String?) {
        _ = thread.sync { [host] in
            host.useStore(make, namespace: namespace)
            return true
        }
    }

    /// After the run drained (every record of the engine committed): the state
    /// forgets the downloads whose files scripts removed, so that the next run
    /// fetches them again.
    public func finish() {
        _ = thread.sync { [host] in
            host.forgetRemovedDownloads()
            return true
        }
    }
}
