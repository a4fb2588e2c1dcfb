import DLPipe
import Foundation

/// Owns the Lua state of a run: loads the job and the drop-in hooks, gives the
/// `dl` API its Swift primitives, and runs handlers. Used on the Lua thread only.
final class ScriptHost: @unchecked Sendable {
    // @unchecked: used only on the run's Lua thread (LuaThread); other threads
    // only pass it along to closures that run there.
    let runtime: LuaRuntime
    var budget: Double
    var hostFunctions: [String: LuaFunctionRef] = [:]
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
    var addedKeys: [String: Int] = [:]
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
    var storeBoundTo: String?
    /// For `dlpipe check`: writes stay in `overlay`, and no state file is created.
    var readOnlyStore = false
    var overlay: [String: LuaValue] = [:]
    /// Calls of dl.add in this run, and their bound: a handler that adds without
    /// end fails with a clear error instead of exhausting memory.
    var addedCount = 0
    var maxDownloads = 250_000
    /// `done` events so far, and the most a run gives (`dl.config{ max_done }`): a done
    /// handler that adds a download each time would otherwise keep the run going for hours.
    private var doneCount = 0
    var maxDone = 1000
    /// The job file as its messages name it (nil for `get --hook`).
    private var jobName: String?
    /// Whose `dl.store` this is: the job's name (`JobStore`).
    var storeNamespace = JobStore.getNamespace
    var store: JobStore?
    /// The state `dl.store` uses instead of the SQLite one (a shared queue's).
    var storeState: (@Sendable () throws(StateFailure) -> any DownloadState)?
    /// The namespace in `storeState` when it is not `storeNamespace`: a shared
    /// queue's job name, the same in every worker whatever its job file is called.
    var storeStateNamespace: String?
    let log: @Sendable (String) -> Void
    let warn: @Sendable (ScriptLine) -> Void
    /// Digests that handlers computed (`f.sha256`), by path, until the
    /// finished event's verdict takes them to the engine's state.
    var computedDigests: [String: String] = [:]
    /// Downloads' files that `dl.remove` removed in this run (`forgetRemovedDownloads`).
    var removedDownloadFiles: [String] = []
    /// The downloads' files, read once per run for `dl.write`/`dl.append`'s new names.
    let knownDownloadFiles = KnownDownloadFiles()
    /// lint.lua's scan, run over each script at load (ScriptLint).
    private var lintScan: LuaFunctionRef?

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
            // The static pass (lint.lua): load runs its scan; the prelude words
            // a handler's wrong return with its return_problem.
            let lint = try ScriptLint.module(in: runtime, api: api.first ?? .nil_)
            if case .function(let scan)? = lint["scan"] { lintScan = scan }
            runtime.setGlobal("__dl.lint", lint)
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

    /// A script's static problems: its compile error (thrown), or what the
    /// token scan finds, one "file:line: message" each. Nothing runs.
    func staticProblems(path: String, displayName: String, isJob: Bool) throws(ScriptError) -> [String] {
        let data = try source(path: path, displayName: displayName)
        do throws(LuaError) {
            _ = try runtime.load(data, chunkName: "@" + displayName)
        } catch {
            throw ScriptError(error)
        }
        guard let lintScan else { return [] }
        return try ScriptLint.problems(scan: lintScan, in: runtime, source: data, displayName: displayName, isJob: isJob)
    }

    /// A script file's bytes, or an error that says why it cannot be read.
    private func source(path: String, displayName: String) throws(ScriptError) -> [UInt8] {
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
        return [UInt8](data)
    }

    /// Loads and runs a script's top level: the job file, or a drop-in hook.
    func load(path: String, displayName: String, isJob: Bool) throws(ScriptError) {
        let data = try source(path: path, displayName: displayName)
        _ = try callHost("set_context", [LuaValue(isJob ? "job" : "hook"), LuaValue(displayName)])
        if isJob { jobName = displayName }
        let chunk: LuaFunctionRef
        do throws(LuaError) {
            chunk = try runtime.load(data, chunkName: "@" + displayName)
        } catch {
            throw ScriptError(error)
        }
        // Compiled: now the mistakes a token scan finds, before anything runs.
        if let lintScan {
            let problems = try ScriptLint.problems(
                scan: lintScan, in: runtime, source: data, displayName: displayName, isJob: isJob)
            if !problems.isEmpty { throw ScriptError(problems: problems) }
        }
        do {
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

    /// A warning of the run itself (not of a script line): always shown.
    func report(_ line: ScriptLine) { warn(line) }

    /// The engine has the downloads added at load, and keeps their keys itself.
    func dropTopLevel() { topLevel = nil }
}
