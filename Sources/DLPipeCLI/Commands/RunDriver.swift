import DLPipe
import DLPipeQueue
import DLPipeLua
import Foundation
import Synchronization

/// Runs an engine to the end with the options' output, and returns the exit status.
enum RunDriver {
    /// `requests` is read once, as the downloads are queued: a lazy sequence
    /// keeps 100,000 requests from existing twice (here and in the engine).
    static func run(
        options: RunOptions, session: ScriptSession?, requests: some Sequence<DownloadRequest>, queue: QueueSetup? = nil
    ) async -> Int32 {
        var configuration = options.configuration(job: session?.settings)
        // A shared queue's worker keeps its state in the queue's database.
        if queue != nil { configuration.statePath = nil }
        let lock: RunLock?
        let started: StartedEngine
        let web: RunWeb?
        do throws(EarlyExit) {
            web = try startWeb(options, queue: queue)
            lock = try takeLock(options, configuration, shared: queue != nil)
            if configuration.transport.insecure {
                // Every run, even with -q: a setting left in a cron line must keep saying so.
                Terminal.error("dlpipe: warning: --insecure: certificates and host names are not checked; anyone on the path can read and change what is downloaded")
            }
            started = try startEngine(configuration, session: session, queue: queue)
        } catch {
            return error.status
        }
        defer { withExtendedLifetime((lock, started.directoryClaim)) {} }
        let engine = started.engine
        let worker = started.worker
        let reporter = connectOutput(options, engine: engine, worker: worker)
        web?.observe(engine)
        let stopper = installStopSignals(engine: engine, reporter: reporter, worker: worker, stdout: options.stdout)
        endEarlyWhenStuck(session, engine: engine, reporter: reporter, worker: worker, stdout: options.stdout)
        worker?.whenStopAsked {
            Terminal.error("dlpipe: the job's control plane asked its workers to stop (dlpipe queue stop)")
            stopper.requestStop()
        }
        JobPauseNotice.install(on: worker, job: queue?.name ?? "", json: options.json)
        startWorker(worker, engine: engine, reporter: reporter)
        session?.start(with: engine)
        // In one step, so that none starts before all are queued: one by one,
        // the first URLs would take the slots before the round-robin over
        // hosts (and the priorities) could see the rest.
        engine.add(contentsOf: requests)
        let (summary, hookCode) = await engine.waitUntilDrained()
        worker?.leave()
        // A stop does not wait for the Lua thread (a handler may still run): a
        // removed download's record then stays, and its missing file is fetched again.
        if !stopper.stopping { session?.finish() }
        if stopper.stopping { await stopper.waitForever() }
        web?.stop()
        return finish(summary, hookCode: hookCode, engine: engine, reporter: reporter, options: options, queue: queue)
    }

    /// `--web`: listening before anything else starts, so that a port in use
    /// ends the run before it does anything.
    private static func startWeb(_ options: RunOptions, queue: QueueSetup?) throws(EarlyExit) -> RunWeb? {
        let job = options.scripts.jobPath.map { ($0 as NSString).lastPathComponent }
        let title = (job ?? "dlpipe get") + (queue.map { " (queue \($0.name))" } ?? "")
        do {
            return try RunWeb.start(options.web, title: title, command: job == nil ? "get" : "run",
                queue: queue.map { ($0.address.description, $0.name) }, json: options.json)
        } catch {
            Terminal.error("dlpipe: --web: \(error.description)")
            throw EarlyExit(status: ExitCode.failed)
        }
    }

    /// A step that ends the run before the engine runs, with this exit status
    /// (its message is printed).
    private struct EarlyExit: Error {
        let status: Int32
    }

    /// The engine, and with a shared queue its worker and the claim on the directory.
    private struct StartedEngine {
        let engine: DownloadEngine
        var worker: QueueWorker?
        var directoryClaim: RunLock?
    }

    /// One run at a time per output directory, or per state file when the
    /// state lives elsewhere (two directories may share one). The lock sits
    /// beside the state, wherever `-o` puts the file. Workers of a shared
    /// queue hold it `shared`: they cooperate through the database, and a run
    /// without the queue still finds the directory busy.
    private static func takeLock(
        _ options: RunOptions, _ configuration: EngineConfiguration, shared: Bool
    ) throws(EarlyExit) -> RunLock? {
        do throws(RunLock.Failure) {
            if shared {
                return try RunLock(path: StateLayout(directory: configuration.directory).lock, wait: options.waitLock, shared: true)
            }
            let path = options.state.map(StateLayout.lock(ofStateFile:))
                ?? configuration.statePath.map(StateLayout.lock(besideDatabase:))
            guard let path else { return nil }
            return try RunLock(path: path, wait: options.waitLock)
        } catch {
            switch error {
            case .held(let pid, let path):
                let holder = pid.map { "process \($0)" } ?? "another process"
                Terminal.error("dlpipe: \(holder) is running in \(configuration.directory) (lock \(path)); use --wait-lock to wait for it")
                throw EarlyExit(status: ExitCode.locked)
            case .io(let message):
                Terminal.error("dlpipe: \(message)")
                throw EarlyExit(status: ExitCode.failed)
            }
        }
    }

    /// The engine with the scripts' hooks; with a shared queue, joined to it as a worker.
    private static func startEngine(
        _ configuration: EngineConfiguration, session: ScriptSession?, queue: QueueSetup?
    ) throws(EarlyExit) -> StartedEngine {
        let hooks = session?.hooks(report: { Terminal.error("dlpipe: " + Terminal.cleanLines($0)) })
        guard let queue else {
            do {
                return StartedEngine(engine: try DownloadEngine(configuration: configuration, hooks: hooks))
            } catch {
                Terminal.error("dlpipe: \(error.message)")
                throw EarlyExit(status: ExitCode.failed)
            }
        }
        switch QueueMode.start(queue, configuration: configuration, hooks: hooks) {
        case .success(let started):
            return StartedEngine(engine: started.engine, worker: started.worker, directoryClaim: started.directoryClaim)
        case .failure(let failure):
            Terminal.error("dlpipe: \(failure.message)")
            throw EarlyExit(status: failure.code)
        }
    }

    /// The reporter the options ask for, fed the engine's events, and the body
    /// sent to stdout (`-o -`) when there is one.
    private static func connectOutput(_ options: RunOptions, engine: DownloadEngine, worker: QueueWorker?) -> any Reporter {
        let reporter = Reporters.make(
            progress: options.progress, json: options.json, quiet: options.quiet,
            // The engine's paths are under the folder's canonical path.
            shownPath: ShownPath(stdoutFolder: options.stdout.map { TargetPath.canonical($0.folder) ?? $0.folder }))
        if let worker, let json = reporter as? JSONReporter { json.describeDone(as: worker) }
        engine.observe { event in
            // A stop (Ctrl-C) ends the open downloads with `stopped` events; the
            // command line reports the stop itself and exits 130, as before.
            if case .stopped = event { return }
            reporter.handle(event)
        }
        options.stdout?.start(engine: engine)
        return reporter
    }

    /// Ctrl-C and SIGTERM stop the engine; what is kept is said once.
    private static func installStopSignals(
        engine: DownloadEngine, reporter: any Reporter, worker: QueueWorker?, stdout: StdoutSink?
    ) -> StopSignals {
        StopSignals.install(
            engine: engine, reporter: reporter,
            announce: stdout != nil ? StopSignals.discardsStdoutBody
                : worker == nil ? StopSignals.keepsPartFiles : StopSignals.givesDownloadsBack,
            // A body that went to stdout cannot be resumed: nothing is kept.
            removeOnQuit: stdout?.stagedPaths ?? [],
            afterStop: { worker?.leave(); stdout?.discard() })
    }

    /// A handler stuck where nothing can stop it: its download already failed; every later
    /// event would wait for it, so the run ends early and cleanly (part files kept), exit 1.
    /// A shared queue's worker leaves the job then, as on SIGTERM.
    private static func endEarlyWhenStuck(
        _ session: ScriptSession?, engine: DownloadEngine, reporter: any Reporter, worker: QueueWorker?, stdout: StdoutSink?
    ) {
        session?.whenStuck { message in
            let ending = worker == nil
                ? "; the run ends early (part files are kept)"
                : "; this worker ends early (its downloads go back to the queue for the other workers)"
            Terminal.error("dlpipe: " + Terminal.cleanLines(message) + ending)
            Task {
                await engine.stop()
                worker?.leave()
                stdout?.discard()
                reporter.flushBeforeExit()
                exit(ExitCode.failed)
            }
        }
    }

    /// Starts a shared queue's worker: each run's end is reported with this
    /// worker's own counts, and a database that stays away ends the process.
    private static func startWorker(_ worker: QueueWorker?, engine: DownloadEngine, reporter: any Reporter) {
        guard let worker else { return }
        // A --follow worker's counts at the end of the run before (`since`),
        // and when that was: its seconds are the wall time from there.
        let countsAtLastEnd = Mutex((counts: RunSummary(), at: ProcessInfo.processInfo.systemUptime))
        let workerID = worker.worker
        worker.start(engine: engine, onRunEnded: { end in
            engine.countsNow { now in
                let own = countsAtLastEnd.withLock { last in
                    let at = ProcessInfo.processInfo.systemUptime
                    defer { last = (now, at) }
                    var own = now.since(last.counts)
                    own.seconds = at - last.at
                    return own
                }
                reporter.runEnded(FollowedRun(end: end, own: own, worker: workerID))
            }
        }, onNotice: { message in
            // The database went away, or came back: the worker goes on.
            Terminal.error("dlpipe: " + message)
        }) { message in
            // The database stayed away, or this worker's lease passed to others:
            // nothing more is placed; part files stay for whoever takes over.
            Terminal.error("dlpipe: " + message)
            reporter.flushBeforeExit()
            fflush(nil)
            // _exit, not exit: the engine's transfers still run on other
            // threads, and exit's handlers must not run under them: OpenSSL's
            // cleanup pulled its locks away, and a worker that lost its lease
            // crashed (SIGSEGV in pthread_rwlock_rdlock) in 2 of 12 runs
            // instead of exiting 4 (OpenSSLProcess now leaves that handler
            // out for every exit). Nothing is left to flush.
            _exit(ExitCode.queueUnreachable)
        }
    }

    /// The drained run's summary and its exit status: a failure of stdout, of
    /// the state or of the cookie jar is reported, a `done` handler's code wins.
    private static func finish(
        _ summary: RunSummary, hookCode: Int?, engine: DownloadEngine, reporter: any Reporter,
        options: RunOptions, queue: QueueSetup?
    ) -> Int32 {
        options.stdout?.finish()
        if let stdout = options.stdout, stdout.stdoutClosed, let failure = stdout.failure {
            // Whoever closed stdout wanted no more: one line, no summary.
            reporter.flushBeforeExit()
            engine.shutdown()
            Terminal.error("dlpipe: -o -: \(failure)")
            return ExitCode.failed
        }
        reporter.finish(summary)
        engine.shutdown()
        if let failure = options.stdout?.failure {
            Terminal.error("dlpipe: -o -: \(failure)")
            return ExitCode.failed
        }
        if let stateError = summary.stateError {
            // The files are as reported; the state may not know some of them.
            Terminal.error("dlpipe: records are missing from the state: \(stateError)")
        }
        if let cookieJarError = summary.cookieJarError {
            Terminal.error("dlpipe: \(cookieJarError)")
        }
        if let hookCode, hookCode != 0, let queue, summary.failed == 0 {
            // Cron mails this worker's output: say why it fails when its own
            // downloads did not (another worker's failed, or `done` chose it).
            Terminal.error("dlpipe: exit \(hookCode) is the job's run's, for every worker: nothing failed here; see dlpipe status --queue URL --name \(queue.name)")
        }
        // An exit status is one byte: a done handler's code is kept within 0...255.
        if let hookCode { return Int32(min(255, max(0, hookCode))) }
        return summary.failed > 0 || summary.stateError != nil || summary.cookieJarError != nil
            ? ExitCode.failed : ExitCode.ok
    }

    /// Loads the scripts, or prints why they cannot load (exit 2 follows).
    /// dl.log and print write to stderr unless `quiet`; dl.warn always writes:
    /// to stderr, or with `json` as a `warning` event on stdout. A notice
    /// (the max_depth limit met) is a warning that `quiet` keeps off stderr.
    static func loadScripts(_ options: ScriptOptions, quiet: Bool, json: Bool) -> ScriptSession? {
        let warn: @Sendable (ScriptLine) -> Void
        if json {
            warn = { line in EventWriter.standardOutput.write(line: JSONLine.warning(line)) }
        } else {
            warn = { line in
                if quiet && line.isNotice { return }
                var shown = line
                shown.text = "warning: " + line.text
                Terminal.error(Terminal.scriptLines(shown.formatted))
            }
        }
        let log: @Sendable (String) -> Void
        if quiet { log = { _ in } } else { log = { line in Terminal.error(Terminal.scriptLines(line)) } }
        // The top level's warnings are out before a load error or check's verdict.
        defer { if json { EventWriter.standardOutput.drain(timeout: .now() + 5) } }
        do {
            return try ScriptSession(options, log: log, warn: warn)
        } catch {
            if error.isUsage {
                Terminal.error("dlpipe: \(error.message)")
                Terminal.error("Try 'dlpipe run --help' for more information.")
                return nil
            }
            if !error.problems.isEmpty {
                // One line each, none indented: an editor's or grep's `file:line:` finds every one.
                for problem in error.problems { Terminal.error(Terminal.clean(problem)) }
            } else {
                Terminal.error(Terminal.cleanLines(error.message))
            }
            return nil
        }
    }
}
