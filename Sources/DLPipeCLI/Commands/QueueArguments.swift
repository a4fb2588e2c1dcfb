import DLPipe
import DLPipeQueue
import DLPipeLua
import Foundation

/// `run --queue URL --name NAME` (docs/scale-out.md): many workers sharing one
/// job through PostgreSQL. The address comes from `--queue`, else
/// `DLPIPE_QUEUE`, else the job's `dl.config{ queue = ... }`; `--name`, the
/// job's identity in the queue, is required with it (many jobs are called
/// job.lua: a default would let unrelated jobs take each other's URLs).
struct QueueArguments {
    var queue: String?
    var name: String?
    /// `--lease S`: seconds without a heartbeat before other workers take this one's downloads.
    var lease: Double?
    /// `--settle S`: seconds the job must stay idle before its run ends.
    var settle: Double?
    /// `--follow`: a daemon worker, waiting for new work instead of exiting.
    var follow = false
    /// `--no-queue`, or `--queue ''` (as curl's `--proxy ''`): no shared
    /// queue, whatever `DLPIPE_QUEUE` or the job's `dl.config{ queue }` say.
    var optedOut: Bool { optOut != nil }
    /// How the queue was turned off, for messages.
    var optOut: String?

    static let environmentVariable = "DLPIPE_QUEUE"

    /// `--queue` and `--name` (and `--no-queue`), and with `worker` (`run`)
    /// the worker's `--lease` and `--settle`; `status` leaves those to be
    /// refused as unknown.
    static func take(_ args: inout Arguments, worker: Bool = false) throws -> QueueArguments {
        // The database URL may hold a password: blanked in argv as -u's is.
        var taken = QueueArguments(queue: try args.secretValues("--queue", secret: ArgvSecret.userinfo).last, name: try args.value("--name"))
        if taken.queue == "" {
            taken.queue = nil
            taken.optOut = "--queue ''"
        }
        if args.flag("--no-queue") {
            if taken.queue != nil {
                throw UsageError("--no-queue and --queue URL contradict each other; give one of them", command: args.command)
            }
            taken.optOut = "--no-queue"
        }
        guard worker else { return taken }
        // At most a day: a lease is how long a dead worker's downloads wait.
        func seconds(_ option: String, atLeast least: Double) throws -> Double? {
            guard let text = try args.value(option) else { return nil }
            guard let value = Double(text), value.isFinite, value >= least, value <= 86_400 else {
                throw UsageError("\(option) wants a number of seconds from \(Int(least)) to 86400, not \(text.debugDescription)", command: "run")
            }
            return value
        }
        taken.follow = args.flag("--follow")
        taken.lease = try seconds("--lease", atLeast: 2)
        taken.settle = try seconds("--settle", atLeast: 0)
        return taken
    }

    /// The queue and job name when the run is in queue mode, nil when it is
    /// not; a usage error for an address that is not PostgreSQL's, for queue
    /// mode without `--name`, and for `--name` without a queue. `job` is nil
    /// before the job file is loaded (the command line and environment are
    /// checked before any script runs).
    func resolve(environment: [String: String], job: JobSettings?) throws -> (address: PostgresAddress, name: String)? {
        let (text, source): (String?, String) = optOut.map { (nil, $0) } ?? given(environment: environment) ?? (job?.queue, "dl.config queue")
        guard let text else {
            // Turned off, or named nowhere once the job had its say.
            if optedOut || job != nil, let problem = withoutQueue { throw UsageError(problem, command: "run") }
            return nil
        }
        let address = try Self.address(text, source: source, command: "run")
        guard let name else {
            throw UsageError("a shared queue (\(source)) needs --name NAME: the job's identity in the queue", command: "run")
        }
        try Self.check(name: name, command: "run")
        return (address, name)
    }

    /// What is wrong with `--name`, `--lease`, `--settle` or `--follow` when
    /// the run has no queue; nil when none of them was given.
    var withoutQueue: String? {
        let what: String
        if name != nil {
            what = "--name names a job in a shared queue"
        } else if lease != nil || settle != nil || follow {
            what = "--lease, --settle and --follow are settings of a shared queue"
        } else {
            return nil
        }
        if let optOut { return what + ", and the queue is turned off here (\(optOut))" }
        return what + "; give the queue too (--queue URL, DLPIPE_QUEUE, or the job's dl.config{ queue } before anything else it does)"
    }

    /// A usage error when `--state FILE` comes with a shared queue: each
    /// worker's state is the queue's database, so the file would be ignored.
    func refuse(statePath: String?, environment: [String: String], job: JobSettings?) throws {
        guard statePath != nil, !optedOut,
            let source = given(environment: environment)?.source ?? job?.queue.map({ _ in "dl.config queue" })
        else { return }
        throw UsageError(
            "--state FILE does not go with a shared queue (\(source)): the queue's database holds the state of every worker",
            command: "run")
    }

    /// The address given by `--queue`, else by `DLPIPE_QUEUE` (set and not
    /// empty), with where it came from for messages. `status --queue` takes
    /// its address from here too.
    func given(environment: [String: String]) -> (text: String, source: String)? {
        if optedOut { return nil }
        if let queue { return (queue, "--queue") }
        if let value = environment[Self.environmentVariable], !value.isEmpty { return (value, Self.environmentVariable) }
        return nil
    }

    /// `text` as a PostgreSQL address; a usage error of `command` that names
    /// `source` (the password shown as ***) when it is not one.
    static func address(_ text: String, source: String, command: String) throws -> PostgresAddress {
        do throws(PostgresError) {
            return try PostgresAddress(text)
        } catch {
            throw UsageError("\(source): \(error.message)", command: command)
        }
    }

    /// A usage error of `command` unless `name` can be a job's name.
    static func check(name: String, command: String) throws {
        guard !name.isEmpty, name.count <= 200, !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw UsageError("--name wants 1 to 200 printable characters, not \(name.debugDescription)", command: command)
        }
    }
}

/// The settings of a worker of a shared queue, from the command line.
struct QueueSetup {
    let address: PostgresAddress
    let name: String
    let lease: Double?
    let settle: Double?
    let follow: Bool
    /// Whether `--per-host` / `--host-delay` or the job's `dl.config` gave
    /// them: only then does this worker change the job's limits.
    var givesPerHost = true
    var givesHostDelay = true
    /// The job file's `max_downloads`: the job's run queues at most that
    /// many, over every worker (nil: no job-wide limit).
    var maxDownloads: Int?

    /// The worker's settings for a run with `configuration`.
    func settings(_ configuration: EngineConfiguration) -> QueueWorker.Settings {
        var settings = QueueWorker.Settings(
            address: address, name: name,
            limits: JobLimits(
                perHost: configuration.perHost, hostDelay: configuration.hostDelay, maxDownloads: maxDownloads,
                givesPerHost: givesPerHost, givesHostDelay: givesHostDelay))
        if let lease { settings.lease = lease }
        if let settle { settings.settle = settle }
        settings.follow = follow
        settings.concurrency = configuration.concurrency
        return settings
    }
}

/// Starting a worker of a shared queue: the database first (exit 4 when it
/// cannot be reached, no request made), then the engine that runs its claims.
enum QueueMode {
    struct Started {
        let engine: DownloadEngine
        let worker: QueueWorker
        /// Held while the worker lives: its job writes into the directory.
        let directoryClaim: RunLock
    }

    struct Failure: Error {
        let message: String
        let code: Int32
    }

    /// Whether the queue's database answers; the one-line error (exit 4) when not.
    static func reachable(_ address: PostgresAddress) -> Failure? {
        do throws(PostgresError) {
            _ = try PostgresConnection(address, applicationName: "dlpipe check")
            return nil
        } catch {
            return Failure(message: error.unreachableMessage, code: ExitCode.queueUnreachable)
        }
    }

    /// The namespace of a shared queue's `dl.store`: the job's name, which
    /// every worker of the job has (its job file may be named otherwise on
    /// each machine: keyed by that, one cursor was two).
    static func storeNamespace(_ name: String) -> String { name }

    /// `dl.store` of job `name` in the queue's database, made at its first use.
    static func store(_ address: PostgresAddress, name: String) -> @Sendable () throws(StateFailure) -> any DownloadState {
        { () throws(StateFailure) -> any DownloadState in
            let job: Int64
            do throws(PostgresError) {
                job = try SharedQueue.jobID(named: name, on: PostgresConnection(address, applicationName: "dlpipe store"))
            } catch {
                throw StateFailure(message: "the shared queue's store: \(error.message)")
            }
            return try PostgresDownloadState(address: address, job: job)
        }
    }

    /// A statement of the worker's start that the queue refused, or a
    /// database that went away meanwhile (exit 4).
    private static func queueFailure(_ error: PostgresError, _ address: PostgresAddress) -> Failure {
        error.isConnectionLoss
            ? Failure(message: error.unreachableMessage, code: ExitCode.queueUnreachable)
            : Failure(message: "the queue at \(address) cannot be used: \(error.message)", code: ExitCode.failed)
    }

    /// The worker registered with the queue, then its claim on the directory,
    /// then its place in the job's run, then the engine that runs its claims.
    /// A failure after the worker registered takes it out of the queue again.
    static func start(_ setup: QueueSetup, configuration: EngineConfiguration, hooks: DownloadHooks?) -> Result<Started, Failure> {
        Result { () throws(Failure) -> Started in
            let (root, worker, stateLink) = try register(setup, configuration)
            do throws(Failure) {
                let directoryClaim = try claimDirectory(worker, setup, configuration)
                do throws(PostgresError) {
                    try worker.joinRun()
                } catch {
                    throw queueFailure(error, setup.address)
                }
                let engine = try startEngine(worker, stateLink: stateLink, root: root, configuration, hooks: hooks)
                return Started(engine: engine, worker: worker, directoryClaim: directoryClaim)
            } catch {
                worker.leave()
                throw error
            }
        }
    }

    /// The output directory's root, and the worker registered with the queue.
    /// Every connection the worker keeps is opened before it registers (the
    /// state's first, then the worker's own): a server that refuses one (a
    /// role's CONNECTION LIMIT) is told at once, exit 4.
    private static func register(
        _ setup: QueueSetup, _ configuration: EngineConfiguration
    ) throws(Failure) -> (root: String, worker: QueueWorker, stateLink: ReconnectingConnection) {
        let root: String
        do throws(DownloadError) {
            root = try DownloadEngine.outputRoot(configuration.directory)
        } catch {
            throw Failure(message: error.message, code: ExitCode.failed)
        }
        let settings = setup.settings(configuration)
        do throws(PostgresError) {
            let stateLink = try PostgresDownloadState.connection(setup.address, patience: settings.outage)
            return (root, try QueueWorker(settings: settings, root: root), stateLink)
        } catch {
            if error.kind == .connection {
                throw Failure(message: error.unreachableMessage, code: ExitCode.queueUnreachable)
            }
            throw Failure(message: "the queue at \(setup.address) cannot be used: \(error.message)", code: ExitCode.failed)
        }
    }

    /// One job per directory at a time, as one run per directory without the
    /// queue; and one directory per job: the one its live workers write into.
    private static func claimDirectory(
        _ worker: QueueWorker, _ setup: QueueSetup, _ configuration: EngineConfiguration
    ) throws(Failure) -> RunLock {
        let claimed: (lock: RunLock, others: [QueueWorker.OtherJob])
        do throws(DownloadError) {
            claimed = try worker.claimDirectory()
        } catch {
            throw Failure(message: error.message, code: ExitCode.failed)
        }
        guard claimed.others.isEmpty else {
            worker.withdrawDirectoryClaim(claimed.lock)
            throw Failure(
                message: QueueWorker.otherJobsMessage(claimed.others, directory: configuration.directory, job: setup.name),
                code: ExitCode.locked)
        }
        let shared: QueueWorker.SharedDirectory
        do throws(PostgresError) {
            shared = try worker.checkSharedDirectory()
        } catch {
            throw queueFailure(error, setup.address)
        }
        switch shared {
        case .shared:
            return claimed.lock
        case .elsewhere(let live, let tokenFound):
            worker.withdrawDirectoryClaim(claimed.lock)
            throw Failure(
                message: QueueWorker.elsewhereMessage(
                    liveWorkers: live, tokenFound: tokenFound, directory: configuration.directory, job: setup.name,
                    tokenPath: worker.directoryTokenPath(in: configuration.directory)),
                code: ExitCode.locked)
        case .unwritable(let message):
            throw Failure(message: message, code: ExitCode.failed)
        }
    }

    /// The engine that runs the worker's claims, on the job's per-URL state.
    private static func startEngine(
        _ worker: QueueWorker, stateLink: ReconnectingConnection, root: String,
        _ configuration: EngineConfiguration, hooks: DownloadHooks?
    ) throws(Failure) -> DownloadEngine {
        var configuration = configuration
        configuration.queue = worker
        // The job's limits as its row holds them: set by this worker, or by
        // an earlier one when this one was not given them.
        configuration.perHost = worker.jobLimits.perHost
        configuration.hostDelay = worker.jobLimits.hostDelay
        let state: PostgresDownloadState
        do throws(StateFailure) {
            // The per-URL state of the whole job: a re-run from any worker asks conditionally.
            state = try PostgresDownloadState(connection: stateLink, job: worker.job)
        } catch {
            throw Failure(message: error.message, code: ExitCode.queueUnreachable)
        }
        worker.readAhead = state
        do throws(DownloadError) {
            return try DownloadEngine(
                configuration: configuration, root: root, hooks: worker.hooks(wrapping: hooks), state: state)
        } catch {
            throw Failure(message: error.message, code: ExitCode.failed)
        }
    }
}
