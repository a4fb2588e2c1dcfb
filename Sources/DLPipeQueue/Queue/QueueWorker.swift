import DLPipe
import Foundation
import Synchronization

/// One worker of a job shared through PostgreSQL (docs/scale-out.md,
/// docs/design/queue-worker.md).
///
/// It registers in the job, joins (or opens) the job's run, and then feeds a
/// local `DownloadEngine`: what the job adds goes into the shared queue
/// (`QueueParticipant`), and what this worker claims, never more than its
/// concurrency, runs in the local engine under the row's id. Each download's
/// end is reported under its claim token. When the local engine drains and
/// the whole job has nothing ready or running for the settle time, one worker
/// runs `done` with the job-wide counts and ends the run; every worker then
/// returns the run's exit code.
///
/// Threads: the claim loop owns one connection, the heartbeat and the
/// listener one each, and adds (from the Lua thread or the caller of
/// `DownloadEngine.add`) one behind a lock. The engine thread never touches
/// the database; it only appends to `state` and signals.
package final class QueueWorker: QueueParticipant, @unchecked Sendable {
    // @unchecked: the links are each used by one thread (see above); `state`
    // and `engineBox` are locked; the rest is set in init.
    package struct Settings: Sendable {
        package var address: PostgresAddress
        package var name: String
        package var limits: JobLimits
        /// Seconds without an acknowledged heartbeat after which other workers
        /// take this one's claims (at least 2).
        package var lease: Double = 30
        /// Seconds the job must have had nothing ready or running before its
        /// run ends (workers started a few seconds apart join one run).
        package var settle: Double = 5
        /// Transfers this worker runs at once (claims holding a host slot);
        /// it holds up to 64 x as many more whose files wait to be placed (`waitingLimit`).
        package var concurrency: Int = 8
        /// `--follow`: never exit when a run ends; wait for the next one.
        package var follow = false
        package var hostname: String = ProcessInfo.processInfo.hostName

        package init(address: PostgresAddress, name: String, limits: JobLimits) {
            self.address = address
            self.name = name
            self.limits = limits
        }

        /// How long a worker waits for an unreachable database before it gives up (exit 4).
        package var outage: Double { max(60, 2 * lease) }
    }

    package let settings: Settings
    /// The job's statements. Its limits are the job row's as this worker
    /// found it until `joinRun` applies the worker's own: set there, before
    /// the worker's threads start, and never changed after.
    private(set) var queue: SharedQueue
    /// Whether this worker made the job's row (with all its limits).
    private let createdJob: Bool
    package let worker: Int64
    /// The run this worker counts into; a `--follow` worker joins each new one.
    package var run: Int64 { runBox.withLock { $0 } }
    let runBox: Mutex<Int64>
    /// A `--follow` worker's run ended and no next one was open when it looked.
    let followsEndedRun = Mutex(false)
    /// The job's row id.
    package var job: Int64 { queue.job }
    /// The job-wide limits in force (the job's row, read when this worker joined).
    package var jobLimits: JobLimits { queue.limits }
    /// The job's folder of part files, relative to the output directory.
    package let partFolder: String
    let root: String

    let loopLink: ReconnectingConnection
    /// The server process of the claim loop's connection: the listener
    /// leaves its notifications alone (that loop knows what it just did).
    let loopSession = Atomic<Int32>(0)
    let addLink: Mutex<ReconnectingConnection>
    let heartbeatLink: ReconnectingConnection
    let listenLink: ReconnectingConnection
    /// Whether `listenLink` listens (listener thread only).
    var listening = false
    /// For `removeDeadWorkersParts`, which several threads call.
    let partsLink: Mutex<ReconnectingConnection>

    let state = Mutex(State())
    /// Held while a claim enters the engine or the claims held ahead (the
    /// check of a cancel waits for it): the ids of claims cancelled on their
    /// way in, which end cancelled there instead (`QueueWorker+Cancel`).
    /// Taken before `state`, never inside it.
    let admission = Mutex<Set<Int64>>([])
    /// The engine's drained calls and the worker's answers.
    let drain = DrainAnswers()
    let wakeSignal = DispatchSemaphore(value: 0)
    let engineBox = Mutex<DownloadEngine?>(nil)
    /// The engine's state, whose lookups the worker reads ahead for what it claims.
    package var readAhead: PostgresDownloadState?
    /// The job's own `done` (the Lua handler), run once per run by the worker that takes it.
    var doneHook: (@Sendable (RunSummary, _ reply: @escaping @Sendable (Int?) -> Void) -> Void)?
    /// The run this worker ended after running its `done`, with the
    /// job-wide counts that `done` got (`--json`'s `done` event carries them).
    let ranDone = Mutex<(run: Int64, summary: RunSummary)?>(nil)
    /// Called once when the worker cannot go on (the database stayed away, the lease was lost).
    var onFatal: @Sendable (String) -> Void = { _ in }
    /// Told what the worker goes through and goes on from (its database
    /// away, then back): one line each, for stderr.
    var onNotice: @Sendable (String) -> Void = { _ in }
    /// Whether `claimDirectory` made the job's folder (`withdrawDirectoryClaim`).
    let createdJobFolder = Mutex(false)
    /// A `--follow` worker's run ended (`noteFollowedEnd`).
    var onRunEnded: (@Sendable (FollowedRunEnd) -> Void)?
    /// The last run whose end `onRunEnded` was told of.
    let endedRunTold = Mutex<Int64>(0)
    /// Run once when `dlpipe queue stop` asks this worker to leave (`whenStopAsked`).
    let stopHandler = Mutex<(@Sendable () -> Void)?>(nil)
    /// Told when the job's pause changes (`whenJobPauseChanges`), what it was
    /// last told, and how many NOTIFYs of a pause or resume the listener heard.
    let pauseHandler = Mutex<(handler: (@Sendable (Bool) -> Void)?, told: Bool, heard: Int)>((nil, false, 0))

    /// Connects, migrates the schema and registers in the job; `joinRun`
    /// joins its run, once the worker may write into its directory.
    /// A database that cannot be reached throws a `.connection` error at once,
    /// and so does one that refuses any of the worker's connections (all are
    /// opened first, before the worker registers): a role's connection limit
    /// below what a worker needs is told at start, not after an outage's wait.
    package init(settings: Settings, root: String) throws(PostgresError) {
        self.settings = settings
        self.root = root
        let lease = max(2, settings.lease)
        // A transaction left open longer than a lease is a frozen worker's.
        loopLink = Self.link(settings.address, "worker", idleInTransaction: lease)
        addLink = Mutex(Self.link(settings.address, "adds", idleInTransaction: lease))
        heartbeatLink = Self.link(settings.address, "heartbeat", idleInTransaction: lease)
        listenLink = Self.link(settings.address, "listen")
        partsLink = Mutex(Self.link(settings.address, "parts", idleInTransaction: lease))
        try Self.connectAll([
            loopLink, addLink.withLock { $0 }, heartbeatLink, listenLink, partsLink.withLock { $0 },
        ])
        let (found, worker) = try loopLink.run(patience: 0) { connection throws(PostgresError) in
            _ = try SchemaMigrator().migrate(connection)
            // The job's limits stay as they are until `joinRun`.
            let found = try SharedQueue.find(job: settings.name, limits: settings.limits, on: connection)
            let worker = try found.queue.register(
                hostname: settings.hostname, pid: getpid(), lease: lease, follows: settings.follow, on: connection)
            return (found, worker)
        }
        self.queue = found.queue
        self.createdJob = found.created
        self.worker = worker
        self.runBox = Mutex(0)
        self.partFolder = ".dlpipe/queue/\(queue.job)"
        let now = QueueClock.now()
        state.withLock {
            $0.lastAcknowledged = now
            $0.placeUntil = now + lease - Self.margin(lease)
        }
    }

    /// Sets the job-wide limits this worker was given and joins the job's
    /// open run, or opens one. After the directory's checks (`claimDirectory`,
    /// `checkSharedDirectory`): a worker refused there changed nothing of the
    /// job (its limits had been written at registration, so a worker started
    /// with the wrong -d and another --per-host changed the limit of every
    /// live worker) and joined nothing, so its leaving ends no run it opened
    /// (each refusal had left a run of its own in the job's history, ended
    /// with 130).
    package func joinRun() throws(PostgresError) {
        let (applied, run) = try loopLink.run(patience: 0) { connection throws(PostgresError) -> (SharedQueue, Int64) in
            let applied = try queue.applying(settings.limits, created: createdJob, on: connection)
            return (applied, try applied.joinRun(worker: worker, on: connection))
        }
        queue = applied
        runBox.withLock { $0 = run }
    }

    /// The part of a lease kept as a margin: a file is placed only while at
    /// least this much of the lease is left.
    static func margin(_ lease: Double) -> Double { max(0.5, lease / 4) }

    /// The run whose `done` this worker ran and whose end it wrote, with the
    /// job-wide counts `done` got; nil when another worker ran it (or it has
    /// not ended). Taken once: a `--follow` worker's next run starts afresh.
    package func takeRanDone() -> (run: Int64, summary: RunSummary)? {
        ranDone.withLock { $0.take() }
    }

    /// Whether this worker's lease surely holds now: not lost, and a margin
    /// of it left since the database acknowledged its last heartbeat, on the
    /// monotonic clock (which runs on while the process is stopped).
    func leaseIsSure() -> Bool {
        state.withLock { !$0.leaseLost && QueueClock.now() < $0.placeUntil }
    }

    /// The hooks the engine gets: the job's, with `drained` answered by the worker.
    package func hooks(wrapping hooks: DownloadHooks?) -> DownloadHooks {
        var wrapped = hooks ?? DownloadHooks()
        doneHook = hooks?.drained
        wrapped.drained = { [self] _, reply in
            if !drain.ask(reply) {
                state.withLock { $0.lookWanted = true }
                signal()
            }
        }
        return wrapped
    }

    /// Starts the worker's threads for `engine` (built with `hooks(wrapping:)`
    /// and this worker as its `EngineConfiguration.queue`).
    /// `onRunEnded`: a `--follow` worker's runs end while it goes on; it is
    /// told of each once (its engine never drains, so nothing else says so).
    /// `onNotice`: a line for stderr when the database goes away and when it is back.
    package func start(
        engine: DownloadEngine, onRunEnded: (@Sendable (FollowedRunEnd) -> Void)? = nil,
        onNotice: @escaping @Sendable (String) -> Void = { _ in },
        onFatal: @escaping @Sendable (String) -> Void
    ) {
        self.onFatal = onFatal
        self.onNotice = onNotice
        self.onRunEnded = onRunEnded
        engineBox.withLock { $0 = engine }
        state.withLock { $0.enginePerHost = jobLimits.perHost }
        engine.observe { [self] event in noteEnd(event) }
        try? FileManager.default.createDirectory(
            atPath: root + "/" + partFolder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        removeDeadWorkersParts()
        Thread.detachNewThread { [self] in ThreadName.set("dlpipe-claim"); claimLoop() }
        Thread.detachNewThread { [self] in ThreadName.set("dlpipe-heartbt"); heartbeatLoop() }
        Thread.detachNewThread { [self] in ThreadName.set("dlpipe-listen"); listenLoop() }
    }

    /// Leaves the job: reports what ended, puts what this worker still holds
    /// back to ready for the others, and marks the worker stopped.
    package func leave() {
        state.withLock { $0.stopping = true }
        signal()
        let ends = state.withLock { $0.ends.take() }
        // Not the claim loop's connection: it may be in the middle of a
        // statement on its thread (libpq connections are not thread-safe).
        // The clean-up's, behind its lock, rather than a new one: a role whose
        // connection limit is just what a worker holds would refuse a new one,
        // and what this worker holds would then wait for its lease.
        _ = try? partsLink.withLock { link throws(PostgresError) in
            try link.run(patience: 5) { connection throws(PostgresError) in
                try report(ends, on: connection)
                try queue.takeBack(worker: worker, on: connection)
                // The last worker of a run that did not end (Ctrl-C): nobody is
                // left to end it, and the next run must start afresh.
                try queue.endOrphanedRun(except: worker, on: connection)
            }
        }
        // What it held went back to ready: whoever takes it starts afresh.
        removeOwnParts()
    }

    func signal() {
        let wasAwake = state.withLock { state -> Bool in
            defer { state.wake = true }
            return state.wake
        }
        if !wasAwake { wakeSignal.signal() }
    }

    // MARK: Adds (QueueParticipant)

    package func add(_ requests: [DownloadRequest]) -> [Int] {
        send(requests.map(QueuedRequestCodec.encode))
    }

    /// Sends `rows` to the queue in pieces; their ids (0: refused by the
    /// job's max_downloads), all 0 after a fatal error (the worker stops).
    @discardableResult
    func send(_ rows: [QueuedRequest]) -> [Int] {
        var ids: [Int] = []
        ids.reserveCapacity(rows.count)
        do {
            try addLink.withLock { link throws(PostgresError) in
                // In pieces: one statement per thousand requests keeps each one short.
                var start = 0
                while start < rows.count {
                    let piece = Array(rows[start..<min(rows.count, start + 1000)])
                    let added = try link.run(patience: settings.outage) { connection throws(PostgresError) in
                        try queue.enqueue(piece, run: run, on: connection)
                    }
                    ids.append(contentsOf: added.map { Int($0) })
                    start += piece.count
                }
            }
        } catch {
            fatal("cannot queue downloads in the shared queue: \(error.message)", givingBack: !error.isConnectionLoss)
            return rows.map { _ in 0 }
        }
        signal()
        return ids
    }

    /// Stops the worker with `message` (the command line exits 4).
    /// `givingBack`: the queue answers but refused a statement (not an
    /// outage, nor a lost lease): what this worker holds goes back to ready
    /// at once, rather than waiting for its lease to run out.
    func fatal(_ message: String, givingBack: Bool = false) {
        let first = state.withLock { state -> Bool in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        onFatal(message + (givingBack ? giveBackAfterRefusal() : ""))
    }

    /// Places nothing more, and gives this worker's claims back (and leaves
    /// the job) in one statement, waiting at most 2 s: what the message says
    /// of the part files.
    private func giveBackAfterRefusal() -> String {
        state.withLock { $0.leaseLost = true }
        let givenBack: Int? = try? partsLink.withLock { link throws(PostgresError) in
            try link.run(patience: 2) { connection throws(PostgresError) in try queue.takeBack(worker: worker, on: connection) }
        }
        guard givenBack != nil else { return "; part files are kept" }
        // Whoever takes them starts afresh: this worker's part files are of no use.
        removeOwnParts()
        return "; its downloads went back to the queue"
    }
}
