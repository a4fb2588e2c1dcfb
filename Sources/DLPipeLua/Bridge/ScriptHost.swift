import DLPipe
import Foundation

/// A load or handler failure, worded `file:line: message` for people.
public struct ScriptError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
    /// A usage error of the command line (exit 2 with its hint), not the script's.
    public private(set) var isUsage = false
    init(_ message: String) { self.message = message }
    init(usage message: String) {
        self.message = message
        isUsage = true
    }
    init(_ error: LuaError) {
        message = error.kind == .runtime ? SandboxHint.annotate(error.message) : error.message
        if let traceback = error.traceback, !traceback.isEmpty { message += "\n" + traceback }
    }
}

/// A line a script wrote with `dl.log` or `dl.warn`.
public struct ScriptLine: Sendable {
    /// "job.lua:12", the script and line that wrote it.
    public var place: String
    /// The download whose handler wrote it (nil at the top level and in `done`).
    public var download: Int?
    public var text: String

    /// `[job.lua:12 #3] text`, as dl.log prints it.
    public var formatted: String {
        download.map { "[\(place) #\($0)] \(text)" } ?? "[\(place)] \(text)"
    }
}

/// What one event's handlers decided, after all of them ran.
struct DispatchOutcome {
    /// "skip", "retry", "giveup", "handled", "exit" or nil (no verdict).
    var verdict: String?
    var extra: LuaValue = .nil_
    /// The name and directory after the handlers, when a handler assigned them.
    var name: String?
    var directory: String?
    var renamed = false
    /// `request` events: `q.headers` after the handlers (what `host.finish` gave back).
    var requestHeaders: LuaValue?
    /// A handler failed (error, time budget, memory): the download fails with kind `hook`.
    var error: ScriptError?

    /// Takes a handler's verdict and its extra value from what `host.run`
    /// returned; the first verdict of an event stands.
    mutating func take(verdict result: ArraySlice<LuaValue>) {
        guard self.verdict == nil, let verdict = result.first?.text else { return }
        self.verdict = verdict
        extra = result.dropFirst().first ?? .nil_
    }

    /// Takes the name and directory `host.finish` returned, when a handler set them.
    mutating func take(rename value: LuaValue?) {
        guard case .table(let renamed)? = value else { return }
        self.renamed = true
        name = renamed[LuaValue("name")]?.text
        directory = renamed[LuaValue("dir")]?.text
    }

    /// Takes `q.headers` as `host.finish` returned it after a `request` event.
    mutating func take(requestHeaders value: LuaValue?) {
        requestHeaders = value
    }
}

/// Owns the Lua state of a run: loads the job and the drop-in hooks, gives the
/// `dl` API its Swift primitives, and runs handlers. Used on the Lua thread only.
final class ScriptHost: @unchecked Sendable {
    // @unchecked: used only on the run's Lua thread (LuaThread); other threads
    // only pass it along to closures that run there.
    let runtime: LuaRuntime
    var budget: Double
    private var hostFunctions: [String: LuaFunctionRef] = [:]
    private var handlerCountCache: [String: Int]?
    /// The engine, once the job is loaded and the run starts.
    var engine: DownloadEngine?
    /// Downloads added at the top level, before the engine exists, and their
    /// keys; nil once a command-line engine has them (it keeps the job's rule itself).
    private(set) var topLevel: TopLevelAdds? = TopLevelAdds()
    /// How those adds are numbered (negative in a shared queue's run).
    var provisional = ProvisionalIDs()
    /// A usage error that waits for the job's `dl.config{ queue }` (HeldUsageError).
    var heldUsage = HeldUsageError()
    /// Every URL and target that `dl.add` took in this run after the start,
    /// with the id it gave, for an engine that forgets ended requests.
    private var addedKeys: [String: Int] = [:]
    /// The output directory (canonical), for `dl.read`.
    var root: String?
    /// The state file for `dl.store`: given (`--state`), or found from the
    /// output directory (`-d`, else the job's `dl.config{dir}` so far, else ".").
    var statePath: String?
    var stateDirectory: String?
    /// The output directory `dl.store` took its state from when neither `-d`
    /// nor `--state` said: the job's `dl.config{dir}` so far, or ".". A later
    /// `dl.config{dir}` naming another is an error, not a store bound to the
    /// wrong folder.
    private var storeBoundTo: String?
    /// For `dlpipe check`: writes stay in `overlay`, and no state file is created.
    var readOnlyStore = false
    private var overlay: [String: LuaValue] = [:]
    /// Calls of dl.add in this run, and their bound: a handler that adds without
    /// end fails with a clear error instead of exhausting memory.
    private var addedCount = 0
    var maxDownloads = 250_000
    /// `done` events so far, and the most a run gives (`dl.config{ max_done }`): a done
    /// handler that adds a download each time would otherwise keep the run going for hours.
    private var doneCount = 0
    var maxDone = 1000
    /// The job file as its messages name it (nil for `get --hook`).
    private var jobName: String?
    /// Whose `dl.store` this is: the job's name (`JobStore`).
    var storeNamespace = JobStore.getNamespace
    private var store: JobStore?
    /// The state `dl.store` uses instead of the SQLite one (a shared queue's).
    var storeState: (@Sendable () throws(StateFailure) -> any DownloadState)?
    /// The namespace in `storeState` when it is not `storeNamespace`: a shared
    /// queue's job name, the same in every worker whatever its job file is called.
    var storeStateNamespace: String?
    let log: @Sendable (String) -> Void
    private let warn: @Sendable (ScriptLine) -> Void
    /// Digests that handlers computed (`f.sha256`), by path, until the
    /// finished event's verdict takes them to the engine's state.
    private var computedDigests: [String: String] = [:]
    /// Downloads' files that `dl.remove` removed in this run (`forgetRemovedDownloads`).
    var removedDownloadFiles: [String] = []
    /// The downloads' files, read once per run for `dl.write`/`dl.append`'s new names.
    let knownDownloadFiles = KnownDownloadFiles()

    init(unsafe: Bool, memoryLimit: Int, budget: Double, vars: [String: String], allowedEnvironment: [String] = [],
         log: @escaping @Sendable (String) -> Void,
         warn: (@Sendable (ScriptLine) -> Void)? = nil) throws(ScriptError) {
        runtime = LuaRuntime(memoryLimit: memoryLimit, unsafe: unsafe)
        self.budget = budget
        self.log = log
        self.warn = warn ?? { line in log(ScriptLine(place: line.place, download: line.download, text: "warning: " + line.text).formatted) }
        registerPrimitives()
        registerKit()
        var table: [LuaValue: LuaValue] = [:]
        for (key, value) in vars { table[LuaValue(key)] = LuaValue(value) }
        runtime.setGlobal("__dl.vars", .table(table))
        runtime.setGlobal("__dl.allow_env", .table(Dictionary(allowedEnvironment.map { (LuaValue($0), LuaValue.boolean(true)) }) { a, _ in a }))
        let host: [LuaValue]
        do throws(LuaError) {
            // The API table first: the prelude reads it as `__dl.api`.
            let api = try runtime.run(Prelude.api, chunkName: Prelude.apiChunkName)
            runtime.setGlobal("__dl.api", api.first ?? .nil_)
            // The script kit's Lua half, which the prelude calls with the primitives.
            let kit = try runtime.run(Prelude.kit, chunkName: Prelude.kitChunkName)
            runtime.setGlobal("__dl.kit", kit.first ?? .nil_)
            host = try runtime.run(Prelude.source, chunkName: Prelude.chunkName)
        } catch {
            throw ScriptError("internal error in the dl prelude: \(error.message)")
        }
        guard case .table(let functions)? = host.first else {
            throw ScriptError("internal error: the dl prelude returned no host table")
        }
        for (key, value) in functions {
            if let name = key.text, case .function(let ref) = value { hostFunctions[name] = ref }
        }
    }

    /// Seconds a script's top level may run: a job that queues a million URLs
    /// there needs several (7.7 µs per `dl.add` in a release build, four
    /// times that in a debug one, more on a busy machine); 10 s failed a
    /// 250,001-add job on a loaded two-core machine. Still a bound: a top
    /// level that never ends is a load error, not a hang.
    static let topLevelBudget: Double = 60

    /// Loads and runs a script's top level: the job file, or a drop-in hook.
    func load(path: String, displayName: String, isJob: Bool) throws(ScriptError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            // FileManager says nothing of why: open(2) does.
            let descriptor = open(path, O_RDONLY)
            var isFolder: ObjCBool = false
            let reason = descriptor < 0 ? String(cString: strerror(errno))
                : FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) && isFolder.boolValue
                ? "it is a directory" : "it is not a regular file"
            if descriptor >= 0 { close(descriptor) }
            throw ScriptError("\(displayName): cannot read the file: \(reason)")
        }
        _ = try callHost("set_context", [LuaValue(isJob ? "job" : "hook"), LuaValue(displayName)])
        if isJob { jobName = displayName }
        do {
            let chunk = try runtime.load([UInt8](data), chunkName: "@" + displayName)
            // The job's os.getenv also answers the names of its own dl.config{ env = ... }.
            if isJob, let getenv = hostFunctions["job_getenv"] {
                runtime.setInEnvironment(of: chunk, "os.getenv", .function(getenv))
            }
            _ = try runtime.call(chunk, [], budget: max(budget, Self.topLevelBudget))
        } catch {
            throw ScriptError(error)
        }
        _ = try callHost("set_context", [LuaValue("job")])
    }

    /// The settings from `dl.config`.
    func config() throws(ScriptError) -> [String: LuaValue] {
        guard case .table(let table)? = try callHost("config", []).first else { return [:] }
        var out: [String: LuaValue] = [:]
        for (key, value) in table { if let name = key.text { out[name] = value } }
        return out
    }

    /// How many handlers each event has.
    func handlerCounts() throws(ScriptError) -> [String: Int] {
        guard case .table(let table)? = try callHost("counts", []).first else { return [:] }
        var out: [String: Int] = [:]
        for (key, value) in table { if let name = key.text { out[name] = Int(value.int ?? 0) } }
        return out
    }

    /// Runs every handler of `event` in order, each with its own time budget;
    /// stops at the first verdict (the first skip wins) or the first failure.
    /// `done` handlers all run (each may log or add downloads): the first exit
    /// code returned stands.
    func dispatch(_ event: String, download: DownloadInfo?, argument: EventArgument) -> DispatchOutcome {
        if event == "done" {
            doneCount += 1
            // Past the limit the handlers run no more, so they add nothing and the run ends.
            if doneCount > maxDone {
                if doneCount == maxDone + 1 {
                    report(ScriptLine(place: jobName ?? "done", download: nil, text: "done has fired \(maxDone) times in this run, the most it may (dl.config{ max_done = N }): its handlers run no more, and the run ends"))
                }
                return DispatchOutcome()
            }
        }
        if handlerCount(event) == 1, let once = hostFunctions["once"] {
            return dispatchOnce(once, event, download: download, argument: argument)
        }
        var outcome = DispatchOutcome()
        do {
            let count = try callHost("begin", argumentCount: 3) { L in
                EventArgument.push(event, download, argument, ids: provisional, on: L)
            }.first?.int ?? 0
            if count > 0, let run = hostFunctions["run"] {
                for index in 1...count {
                    let result: [LuaValue]
                    do {
                        result = try runtime.call(run, [LuaValue(event), .integer(index)], budget: budget)
                    } catch {
                        outcome.error = ScriptError(error)
                        break
                    }
                    outcome.take(verdict: result[...])
                    if outcome.verdict != nil && event != "done" { break }
                }
            }
            let finish = try callHost("finish", [])
            outcome.take(rename: finish.first)
            outcome.take(requestHeaders: finish.count > 1 ? finish[1] : nil)
        } catch {
            outcome.error = error
        }
        return outcome
    }

    /// `dispatch` for an event with exactly one handler: one Lua call, under the
    /// handler's budget, that begins, runs the handler and finishes.
    private func dispatchOnce(_ once: LuaFunctionRef, _ event: String, download: DownloadInfo?, argument: EventArgument)
        -> DispatchOutcome
    {
        var outcome = DispatchOutcome()
        let result: [LuaValue]
        do {
            result = try runtime.call(once, budget: budget, argumentCount: 3) { L in
                EventArgument.push(event, download, argument, ids: provisional, on: L)
            }
        } catch {
            outcome.error = ScriptError(error)
            _ = try? callHost("finish", [])  // the handler failed before finish ran
            return outcome
        }
        // host.once returns the verdict, its extra value, then finish's rename.
        outcome.take(verdict: result.prefix(2))
        outcome.take(rename: result.count > 2 ? result[2] : nil)
        outcome.take(requestHeaders: result.count > 3 ? result[3] : nil)
        return outcome
    }

    /// Handlers per event, learnt once: `dl.on` is allowed at the top level only,
    /// so the counts are fixed once every script has loaded and events flow.
    private func handlerCount(_ event: String) -> Int {
        if handlerCountCache == nil { handlerCountCache = (try? handlerCounts()) ?? [:] }
        return handlerCountCache?[event] ?? 0
    }

    private func callHost(_ name: String, _ arguments: [LuaValue]) throws(ScriptError) -> [LuaValue] {
        try callHost(name, argumentCount: arguments.count) { L in
            for argument in arguments { runtime.push(argument, on: L) }
        }
    }

    private func callHost(
        _ name: String, argumentCount: Int, pushArguments: (OpaquePointer) -> Void
    ) throws(ScriptError) -> [LuaValue] {
        guard let function = hostFunctions[name] else { throw ScriptError("internal error: no host function \(name)") }
        do {
            return try runtime.call(function, budget: 5, argumentCount: argumentCount, pushArguments: pushArguments)
        } catch {
            throw ScriptError(error)
        }
    }

    /// The digest a handler computed for `path` during the event just
    /// dispatched, if any. Clears the others: a digest of another path came
    /// from an `f` kept past its event, and nobody would take it.
    func takeComputedDigest(of path: String) -> String? {
        defer { computedDigests.removeAll() }
        return computedDigests[path]
    }

    // MARK: primitives behind the dl API

    // Each primitive's `cost` is the most Swift memory it takes per byte of its arguments
    // (LuaRuntime.register), measured as peak RSS over a 40 MB argument: URLComponents
    // copies a URL several times, SafeName's normalisation and scalar passes many more.
    private func registerPrimitives() {
        runtime.register("__dl.add", cost: 5) { [unowned self] args throws(LuaCallError) in try add(args) }
        runtime.register("__dl.pause") { [unowned self] args in
            untouchedInQueue(args.first, "pause") { $0.pause($1) }
        }
        runtime.register("__dl.resume") { [unowned self] args in
            untouchedInQueue(args.first, "resume") { $0.resume($1) }
        }
        runtime.register("__dl.cancel") { [unowned self] args in
            untouchedInQueue(args.first, "cancel") { $0.cancel($1) }
        }
        runtime.register("__dl.read") { [unowned self] args in
            switch readInsideRoot(args.first?.text ?? "") {
            case .success(let bytes): return [.string(bytes)]
            case .failure(let error): return [.nil_, LuaValue(error.message)]
            }
        }
        runtime.register("__dl.store_get", name: "dl.store.get") { [unowned self] args throws(LuaCallError) in
            try heldUsage.check()
            guard let key = args.first?.text else { return [.nil_] }
            bindStore(configDir: args.count > 1 ? args[1].text : nil)
            if readOnlyStore, let value = overlay[key] { return [value] }
            switch openStore(configDir: args.count > 1 ? args[1].text : nil) {
            case .failure where readOnlyStore: return [.nil_]  // check: no state yet is an empty store
            case .failure(let error): return [.nil_, LuaValue(error.message)]
            case .success(let store):
                do throws(StateFailure) {
                    return [try store.value(key).map(StoreCodec.value) ?? .nil_]
                } catch {
                    return [.nil_, LuaValue(error.message)]
                }
            }
        }
        runtime.register("__dl.store_set", name: "dl.store.set", cost: 5) { [unowned self] args throws(LuaCallError) in
            try heldUsage.check()
            guard let key = args.first?.text else { return [.nil_, LuaValue("a key is needed")] }
            let value = args.count > 1 ? args[1] : .nil_
            bindStore(configDir: args.count > 2 ? args[2].text : nil)
            if readOnlyStore {
                // the same checks as a real write
                let text: String
                do throws(StoreCodec.Unstorable) { text = try StoreCodec.text(value) } catch { return [.nil_, LuaValue(error.message)] }
                do throws(JobStore.Refused) { try JobStore.check(text) } catch { return [.nil_, LuaValue(error.message)] }
                overlay[key] = value
                return [.boolean(true)]
            }
            switch openStore(configDir: args.count > 2 ? args[2].text : nil) {
            case .failure(let error): return [.nil_, LuaValue(error.message)]
            case .success(let store):
                let text: String
                do throws(StoreCodec.Unstorable) { text = try StoreCodec.text(value) } catch { return [.nil_, LuaValue(error.message)] }
                do throws(JobStore.Refused) { try store.setValue(key, text) } catch { return [.nil_, LuaValue(error.message)] }
                return [.boolean(true)]
            }
        }
        runtime.register("__dl.checkpath", name: "d.name", cost: 3) { [unowned self] args in
            guard let root else { return [] }
            let directory = args.first?.text
            let name = args.count > 1 ? args[1].text ?? "" : ""
            do throws(DownloadError) {
                _ = try TargetPath.resolve(root: root, directory: directory, name: name.isEmpty ? "x" : name)
                return []
            } catch {
                return [LuaValue(error.message)]
            }
        }
        runtime.register("__dl.checkconfig") { [unowned self] args in
            // One key of dl.config, by the rules JobSettings reads it with: the
            // prelude raises the message at the script's line.
            guard let key = args.first?.text, args.count > 1 else { return [] }
            if key == "dir", let bound = storeBoundTo, let dir = args[1].text, dir != bound {
                return [LuaValue("dl.config: dir is set after dl.store was used, which took the state of \(bound.debugDescription); call dl.config{ dir = ... } before dl.store")]
            }
            do throws(ScriptError) {
                let settings = try JobSettings([key: args[1]])
                // The job's own top-level adds that follow count against it.
                if let limit = settings.maxDownloads { maxDownloads = limit }
                if settings.queue != nil {
                    if let problem = provisional.lateQueueProblem { return [LuaValue(problem)] }
                    provisional.configNamesQueue = true
                    heldUsage.queueNamed()
                }
                return []
            } catch {
                return [LuaValue(error.message)]
            }
        }
        runtime.register("__dl.sha256") { [unowned self] args in
            guard let path = args.first?.text, let root, let file = try? ConfinedFile(path, root: root),
                let digest = FileDigest.sha256Hex(ofDescriptor: file.descriptor)
            else { return [.nil_] }
            computedDigests[path] = digest
            return [LuaValue(digest)]
        }
        runtime.register("__dl.safename", cost: 15) { args in
            guard let text = args.first?.text, let name = SafeName.sanitize(text) else { return [.nil_] }
            return [LuaValue(name)]
        }
        runtime.register("__dl.resolve", name: "dl.url.resolve", cost: 7) { args throws(LuaCallError) in
            guard args.count >= 2, let base = args[0].text, let ref = args[1].text else {
                throw LuaCallError("dl.url.resolve wants a base URL and a reference")
            }
            // Past the URL limit: the reference as it is, unresolved (no work
            // on it); dl.add refuses it with its warning.
            if URLLimit.problem(base) != nil || URLLimit.problem(ref) != nil { return [LuaValue(ref)] }
            // Both through the engine's normaliser, so that a resolved URL is
            // the one dl.add and `get` would queue for the same text.
            guard let resolved = URLTools.resolve(
                base: URLNormalization.normalize(base), reference: URLNormalization.normalizeReference(ref))
            else { return [.nil_] }
            return [LuaValue(URLNormalization.normalize(resolved))]
        }
        runtime.register("__dl.parse", name: "dl.url.parse", cost: 6) { args throws(LuaCallError) in
            guard let text = args.first?.text else { throw LuaCallError("dl.url.parse wants a URL") }
            return [URLTools.parse(text)]
        }
        runtime.register("__dl.log", cost: 4) { [unowned self, log] args throws(LuaCallError) in
            try heldUsage.check()
            log(line(args).formatted)
            return []
        }
        runtime.register("__dl.warn", cost: 4) { [unowned self, warn] args throws(LuaCallError) in
            try heldUsage.check()
            warn(line(args))
            return []
        }
    }

    /// The line of a `__dl.log` or `__dl.warn` call: position, download id, text.
    /// The id is the engine's, as the command line's own lines about that
    /// download print it (a shared queue's row, not a provisional id).
    private func line(_ args: [LuaValue]) -> ScriptLine {
        let position = args.first?.text ?? ""
        let id = args.count > 1 ? args[1].int.map { provisional.row(of: Int($0)) ?? Int($0) } : nil
        let text = args.count > 2 ? (args[2].text ?? "") : ""
        let place = position.trimmingCharacters(in: CharacterSet(charactersIn: ": "))
        return ScriptLine(place: place, download: id, text: text)
    }

    /// The first use of the store, with neither `-d` nor `--state`, takes the
    /// state of the job's `dl.config{dir}` so far: `check` (whose writes stay
    /// in memory) binds it too, so it reports a later `dir` as `run` does.
    private func bindStore(configDir: String?) {
        if statePath == nil && stateDirectory == nil && storeBoundTo == nil { storeBoundTo = configDir ?? "." }
    }

    /// `dl.store` in `make`'s state from now on; a store opened before is let go.
    func useStore(_ make: @escaping @Sendable () throws(StateFailure) -> any DownloadState, namespace: String?) {
        storeState = make
        storeStateNamespace = namespace
        store = nil
    }

    /// The store's own connection (the engine has another; SQLite's WAL lets both work).
    func openStore(configDir: String?) -> Result<JobStore, ScriptError> {
        if let store { return .success(store) }
        if let storeState {
            do throws(StateFailure) {
                let opened = JobStore(
                    namespace: storeStateNamespace ?? storeNamespace, earlierNamespace: storeNamespace, state: try storeState())
                store = opened
                return .success(opened)
            } catch {
                return .failure(ScriptError(error.message))
            }
        }
        bindStore(configDir: configDir)
        let path = statePath ?? StateLayout(directory: stateDirectory ?? configDir ?? ".").database
        if readOnlyStore && !FileManager.default.fileExists(atPath: path) {
            return .failure(ScriptError("no state yet"))
        }
        do throws(StateFailure) {
            let opened = JobStore(namespace: storeNamespace, state: try StateStore(path: path))
            store = opened
            return .success(opened)
        } catch {
            return .failure(ScriptError(error.message))
        }
    }

    private func add(_ args: [LuaValue]) throws(LuaCallError) -> [LuaValue] {
        func text(_ i: Int) -> String? { i < args.count ? args[i].text : nil }
        guard let url = text(0) else { throw LuaCallError("url must be a string") }
        // Past the limit, refused before any work on it (the prelude warns and
        // returns nil): one hostile link must not hold the run.
        if let problem = URLLimit.problem(url) { return [.nil_, .nil_, .nil_, LuaValue(problem)] }
        // The first ":"-separated part that is not empty (as `split` gives it),
        // found without splitting the whole URL: `split` was a third of the
        // Swift side of a top-level dl.add.
        let scheme = url.drop { $0 == ":" }.prefix { $0 != ":" }.lowercased()
        guard scheme == "http" || scheme == "https" else {
            return [.nil_, LuaValue("only http and https URLs can be added, not \(url.debugDescription)")]
        }
        var headers: [String: String] = [:]
        if args.count > 3, case .table(let table) = args[3] {
            for (key, value) in table { if let k = key.text, let v = value.text { headers[k] = v } }
        }
        // Refused here, as an error of the dl.add call: a load error at the
        // job's top level, a failure of the handler's download in a handler.
        if let problem = HeaderField.problem(in: headers) { throw LuaCallError(problem) }
        // A name or dir that leaves the output directory is refused here too, so
        // that a top-level add fails to load (run and check, before any request)
        // instead of failing after its request; symlinks wait for the response.
        if text(1) != nil || text(2) != nil {
            do throws(DownloadError) {
                _ = try TargetPath.lexical(directory: text(2), name: text(1) ?? "x")
            } catch {
                throw LuaCallError(error.message)
            }
        }
        // Past the limit the add is refused without an error (the prelude warns
        // once and returns nil), so the handler that made it does not fail.
        guard addedCount < maxDownloads else {
            return [.nil_, .nil_, LuaValue("this run already has \(maxDownloads) downloads, the most it may queue (dl.config{ max_downloads = N }); later adds are dropped")]
        }
        // Normalised here too, so that this table keys a URL as the engine does;
        // its normal form (a non-ASCII byte as three) must fit the limit too.
        let normalized = URLNormalization.normalize(url)
        if let problem = URLLimit.problem(normalized) { return [.nil_, .nil_, .nil_, LuaValue(problem)] }
        // The prelude checked these against api.lua's ranges; a value past them
        // would trap the engine's conversions (a priority must fit the queue's
        // integer column, a timeout Int milliseconds), so none passes here either.
        let priority = args.count > 5 ? args[5].int ?? 0 : 0
        guard (-1_000_000_000...1_000_000_000).contains(priority) else { throw LuaCallError("priority out of range") }
        var controls: [LuaValue: LuaValue] = [:]
        if args.count > 7, case .table(let table) = args[7] { controls = table }
        let seconds = ["timeout", "max_time", "speed_time"].map { controls[LuaValue($0)]?.double }
        for (key, value) in zip(["timeout", "max_time", "speed_time"], seconds) {
            if let value, !(value > 0 && value <= JobSettings.maxSeconds) { throw LuaCallError("\(key) out of range") }
        }
        addedCount += 1
        var request = DownloadRequest(
            url: normalized, name: text(1), directory: text(2), headers: headers, sha256: text(4),
            priority: Int(priority),
            parent: args.count > 6 ? engineID(args[6]) : nil)
        if !controls.isEmpty {
            request.timeout = seconds[0]
            request.maxTime = seconds[1]
            request.speedLimit = controls[LuaValue("speed_limit")]?.double.map { Int(max(1, min($0, 1e15))) }
            request.speedTime = seconds[2]
            request.maxSize = controls[LuaValue("max_size")]?.int
            if controls[LuaValue("into")]?.text == "memory" { request.into = .memory }
            request.method = controls[LuaValue("method")]?.text
            if case .string(let body)? = controls[LuaValue("body")] { request.body = body }
            request.metaJSON = controls[LuaValue("meta_json")]?.text
            request.depth = Int(controls[LuaValue("depth")]?.int ?? 0)
        }
        // The job's rule (SPEC 6): a URL and target already added in this run
        // give the first id back, even after that download ended, so a crawl
        // that meets a link twice never loops. (A library engine's own `add`
        // deduplicates only open downloads.)
        let key = request.deduplicationKey
        if let id = addedKeys[key] { return [.integer(Int64(provisional.shown(id)))] }
        if let position = topLevel?.id(ofKey: key, request) {
            return [.integer(Int64(provisional.id(ofPosition: position)))]
        }
        if let engine {
            let id = engine.add(request).rawValue
            // 0: a shared queue's run has queued the job's max_downloads,
            // counted over every worker; refused as past the limit here.
            if id == 0 && engine.isShared {
                return [.nil_, .nil_, LuaValue("the job's run already has \(maxDownloads) downloads queued by its workers, the most it may queue (dl.config{ max_downloads = N }); later adds are dropped")]
            }
            // The command line's engine keeps this rule itself: no second table.
            if !engine.deduplicatesWholeRun { addedKeys[key] = id }
            // A top-level add's row (a handler met its URL again) keeps the
            // id the top level got.
            return [.integer(Int64(provisional.shown(id)))]
        }
        // Before the run starts: keep it, with the id the engine will give it
        // (the engine numbers new requests 1, 2, 3..., and these are all new),
        // or a provisional one in a shared queue's run (ProvisionalIDs).
        let id = provisional.id(ofPosition: topLevel!.add(key: key, request))
        return [.integer(Int64(id))]
    }

    /// A warning of the run itself (not of a script line): always shown.
    func report(_ line: ScriptLine) { warn(line) }

    /// The engine has the downloads added at load, and keeps their keys itself.
    func dropTopLevel() { topLevel = nil }

    /// Runs a control (`act`) on the download `value` names; in a worker of
    /// a shared queue, why it reached none, for the prelude's warning.
    /// Without a queue a control of a download that ended does nothing, as
    /// documented; in a worker the download may also be waiting in the
    /// queue or held ahead, and a user would not know the pause did nothing.
    /// (One another live worker runs is passed on to it: `act` is true.)
    private func untouchedInQueue(
        _ value: LuaValue?, _ verb: String, _ act: (DownloadEngine, DownloadID) -> Bool
    ) -> [LuaValue] {
        guard let engine else { return [] }
        if let id = engineID(value), act(engine, id) { return [] }
        guard engine.isShared else { return [] }
        // A cancel reaches the queue's waiting rows and the claims held
        // ahead too; a pause or resume only what a worker's engine runs.
        let why = verb == "cancel"
            ? "it ended, or its worker died and the queue has not taken it back yet"
            : "it waits in the queue or in a worker's claims held ahead, or it ended"
        return [LuaValue("nothing done: no worker runs it now (\(why))")]
    }

    /// The engine's id of a number a script passed (nil before the run, or
    /// for a number the engine never gave).
    private func engineID(_ value: LuaValue?) -> DownloadID? {
        guard let number = value?.int else { return nil }
        return engine?.downloadID(number: provisional.row(of: Int(number)) ?? Int(number))
    }

    /// The bytes of a regular file inside the output directory (ConfinedFile), when they fit
    /// in what is left of the script memory cap: checked against the file's size before a
    /// byte is read (the Swift side's copy is outside the cap; a 400 MB download read whole
    /// reached 850 MB before the cap refused the string).
    private func readInsideRoot(_ path: String) -> Result<[UInt8], ScriptError> {
        guard let root else { return .failure(ScriptError("no output directory yet")) }
        do throws(ScriptError) {
            let file = try ConfinedFile(path, root: root)
            // Swift pushes the string with the cap off: the check is here, before the read.
            let left = max(0, runtime.memoryLimit - runtime.memoryInUse)
            let tooLarge = ScriptError("\(path) has \(file.size) bytes, more than the script memory cap of \(LuaRuntime.describe(bytes: runtime.memoryLimit)) leaves room for (\(left) bytes)")
            guard file.size <= left, let bytes = try file.readAll(atMost: left) else { return .failure(tooLarge) }
            return .success(bytes)
        } catch {
            return .failure(error)
        }
    }
}
