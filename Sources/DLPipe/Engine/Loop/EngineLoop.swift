internal import CPosix
import Foundation

/// The engine's core, on its one thread: it owns the jobs, the scheduler and the
/// curl multi handle, and runs `curl_multi_poll` for every transfer. It is made
/// on that thread (`EngineLoop.start`) and is not Sendable, so the compiler
/// keeps it there: other threads hold its `EngineInbox` and talk to it only
/// through `post`, which queues a command and wakes the poll.
///
/// Who may touch what (docs/architecture.md, "Threads"):
/// - the engine thread (`dlpipe-engine`): every `var` here, the jobs, the
///   transfers and curl (its callbacks run inside `multi.perform`, on it);
///   `assertOnEngineThread` checks this in debug builds;
/// - the state queue (`StateWriter`, `dlpipe-state`): the SQLite connection;
/// - the syncfs queue (`syncQueue`, `dlpipe-sync`): syncfs and the held bodies it
///   writes and links, which it hands back with `.synced`; the fdatasync queue
///   (`fileSyncQueue`, `dlpipe-fsync`): fdatasync of a few large part files on
///   descriptors handed to it (`PartFileSync`), also answered with `.synced`; the
///   write-back queue (`PartFile`): `sync_file_range` on duplicated descriptors;
///   the resume-hash queue (`dlpipe-hash`): reading part files it was given. Their
///   blocks capture Sendable values and the inbox, never the loop;
/// - the Lua thread (`LuaThread`, DLPipeLua): the `lua_State`; it answers hooks
///   through the inbox;
/// - any thread: the `EngineInbox` (`post`, the wake-up, the counters).
final class EngineLoop {
    enum Command: Sendable {
        case add(AdmittedRequest)
        /// Several adds in one command: all are queued before the next start.
        case addAll([AdmittedRequest])
        /// A list is being added in pieces: no download starts until the
        /// matching `releaseStarts` (they nest).
        case holdStarts, releaseStarts
        /// A shared queue participant's change to this engine, applied
        /// through `QueueUpdateTarget` (what it is, the update says).
        case participant(any QueueUpdate)
        case pause(DownloadID), resume(DownloadID), cancel(DownloadID)
        case fail(DownloadID, DownloadError)
        case responseVerdict(DownloadID, ResponseVerdict)
        case finishedVerdict(DownloadID, FinishedVerdict)
        case retryVerdict(DownloadID, RetryVerdict)
        case failureVerdict(DownloadID, FailureVerdict)
        /// A `failed` hook gave no reply within the hook deadline: the download
        /// fails with this error (kind `hook`).
        case failureVerdictMissed(DownloadID, DownloadError)
        /// A `request` hook's headers for the hop asked under `generation`.
        case requestVerdict(DownloadID, generation: Int, RequestVerdict)
        case drainedVerdict(Int?)
        /// A `placed` hook is done.
        case placedDone
        /// The sync of this batch of `syncingBatches` returned.
        case synced(batch: Int)
        /// The part file's first bytes are hashed for a resume (ResumeHash).
        case resumeHashed(DownloadID, ResumeHash)
        /// A kept file's bytes are hashed under `verify` (ContentCheck).
        case contentChecked(DownloadID, ContentCheck)
        /// A split download's part file was synced with these segments written
        /// (`SplitPlan.recordText` from before the sync): the record may say so.
        case segmentsSynced(DownloadID, String)
        case waitIdle(@Sendable (RunSummary, Int?) -> Void)
        /// The counts as they are now (a cancelled `waitUntilDrained`).
        case countsNow(@Sendable (RunSummary, Int?) -> Void)
        case waitOutcome(DownloadID, @Sendable (DownloadOutcome?) -> Void)
        /// Stop every transfer (part files stay) and end the thread; then `done`.
        case stop(done: (@Sendable () -> Void)?)
    }

    let configuration: EngineConfiguration
    /// The output directory, absolute and canonical.
    let root: String
    let hooks: DownloadHooks?
    let interests: HookInterests
    let events: EventHub
    /// Which downloads are open, for the public side (told of every end).
    let registry: DownloadRegistry
    let policy: RetryPolicy
    /// The speed cap shared by every transfer; nil (no cost at all) without one.
    let pacer: RatePacer?
    /// The state, written on a thread of its own; nil runs without state.
    let store: StateWriter?

    /// How other threads reach this loop, and how work sent off this thread
    /// answers (its blocks capture this, never `self`).
    let inbox: EngineInbox
    let multi: CurlMulti
    /// The engine thread; set when `run` starts, never changed after.
    private var thread: Thread?
    /// Each host's robots.txt, known or on its way (`--robots`).
    let robots = RobotsBook()
    /// The output directory, open: file calls relative to it, and syncfs.
    let output: OutputDirectory
    /// The file names: what the disk holds, what downloads hold, the taken
    /// rule, part and final names, and every rename, removal and folder.
    let targets: TargetRegistry
    /// The cookies of every transfer, when the configuration names a cookie
    /// file or jar; nil (curl's cookie engine off) otherwise.
    let cookies: CookieJar?
    let startedAt = EngineLoop.now()

    // What the loop owns, by concern (each in its own file).
    /// Downloads being worked on: made from `schedule.waiting` when first needed.
    var jobs: [DownloadID: Job] = [:]
    /// The transfer slots: how many run at once, in all and per host.
    var scheduler: Scheduler
    /// Waiting requests, retry timers, host turns, paused downloads.
    let schedule: LoopSchedule
    /// The running transfers and the idle easy handles.
    let pool = TransferPool()
    /// From a whole body to a durable, named file: commits, batches, syncs.
    let disk: DiskPipeline
    /// Hook calls out and their deadlines.
    let hookCalls = HookCalls()
    /// The run's record, counts, outcomes, drain and stop, and their waiters.
    let ledger = RunLedger()

    /// The most files a batch synced file by file may have: each fdatasync
    /// flushes the disk's cache on its own (1.5 to 4 ms here, one after the
    /// other), where one syncfs flushes once for the whole batch.
    static let perFileSyncLimit = 4
    static let stateCommitInterval = 0.05
    static let maxHeldBytes = 16 << 20

    /// Made on the engine thread by `start`; unit tests make one anywhere and never run it.
    init(configuration: EngineConfiguration, root: String, hooks: DownloadHooks?, events: EventHub,
         registry: DownloadRegistry = DownloadRegistry(engine: 0), store: (any DownloadState)?,
         cookies: CookieJar? = nil, inbox: EngineInbox = EngineInbox()) {
        self.inbox = inbox
        self.registry = registry
        self.configuration = configuration
        self.store = store.map(StateWriter.init)
        self.root = root
        self.hooks = hooks
        self.interests = hooks?.interests ?? []
        self.events = events
        self.policy = RetryPolicy(
            retries: configuration.retries, base: configuration.backoffBase,
            cap: configuration.backoffCap)
        self.pacer = configuration.rateLimit.map { RatePacer(bytesPerSecond: $0) }
        self.multi = CurlMulti(inbox.multiHandle)
        self.cookies = cookies
        self.schedule = LoopSchedule(hostDelay: configuration.hostDelay)
        self.output = OutputDirectory(root: root)
        self.targets = TargetRegistry(output: output, claims: configuration.queue?.files)
        // A shared queue's worker holds bodies too: its lease is checked right
        // before each link (`HeldFile.place`), as before each rename (`placeFile`).
        self.disk = DiskPipeline(
            holdsWholeBodies: store != nil && configuration.heldBodies != .off && HeldFile.supported(in: output),
            keepsPartDescriptors: store != nil && DescriptorBudget.limit() >= 1024)
        // No more transfers at once than the descriptor limit has room for, so
        // that a low `ulimit -n` slows the run down instead of failing it.
        self.scheduler = Scheduler(
            concurrency: min(configuration.concurrency, max(1, DescriptorBudget.transfers())),
            perHost: configuration.perHost)
    }

    /// Starts the engine thread, which makes the loop (the run's record, the
    /// cookie jar, the multi handle) and runs it; returns once it is made, or
    /// throws what failed. Everything passed is Sendable: the loop itself
    /// never leaves that thread, and `inbox` is how the others reach it.
    static func start(
        inbox: EngineInbox, configuration: EngineConfiguration, root: String, hooks: DownloadHooks?,
        events: EventHub, registry: DownloadRegistry, store: (any DownloadState)?
    ) throws(DownloadError) {
        try inbox.start { inbox throws(DownloadError) in
            let cookies = configuration.cookieFile != nil || configuration.cookieJar != nil
                ? try CookieJar(readFile: configuration.cookieFile, writeFile: configuration.cookieJar) : nil
            let loop = EngineLoop(
                configuration: configuration, root: root, hooks: hooks, events: events, registry: registry,
                store: store, cookies: cookies, inbox: inbox)
            do throws(StateFailure) {
                loop.ledger.runID = try loop.store?.startRun() ?? 0
            } catch {
                throw DownloadError(.io, error.message)
            }
            return loop
        }
    }

    /// Queues a command for this loop (see `EngineInbox.post`).
    func post(_ command: Command) { inbox.post(command) }

    /// Debug builds stop when engine state is touched off the engine thread
    /// (an engine that never started, as in unit tests, is not checked). In
    /// release builds this is nothing at all.
    @inline(__always)
    func assertOnEngineThread(_ caller: StaticString = #function) {
        assert(thread == nil || Thread.current === thread, "EngineLoop.\(caller) off the engine thread")
    }

    /// Monotonic seconds.
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// The loop, on the engine thread (`EngineInbox.start`), until the stop.
    func run() {
        thread = Thread.current
        while !ledger.stopped {
            let commands = inbox.take()
            for command in commands {
                if ledger.stopped { ledger.lateCommands.append(command) } else { handle(command) }
            }
            if ledger.stopped { break }
            fireDueTimers()
            expireHookCalls()
            if schedule.startsHeld == 0 { startQueued() }
            if !pool.splits.isEmpty { startSegments() }
            releasePacedTransfers()
            let activeAfterStart = scheduler.active
            multi.perform()
            let done = multi.completions()
            openCommittedParts(completed: done)
            let completed = handleCompletions(done)
            placeDurableFiles()
            tickProgress()
            checkIdle()
            if DrainTrace.enabled { traceState() }
            flushState()
            hooks?.endOfTurn?()
            if ledger.stopped { break }
            // A slot freed in this turn (a transfer ended, or an attempt failed
            // before its body, e.g. a part file that cannot be created) goes to
            // the next download now, not after the poll's timeout of up to 1 s.
            let slotFreed = completed > 0 || scheduler.active < activeAfterStart
            if slotFreed && scheduler.queued > 0 && schedule.startsHeld == 0 { continue }
            inbox.sleep(polling: multi, milliseconds: pollTimeout())
        }
        shutDown()
    }

    /// The job of `id`, made from its waiting request on first use. Making it
    /// applies what the state knows, which may end it at once (a finished file
    /// under refresh "never"): then it leaves the queue and the job returned
    /// has its outcome.
    func job(_ id: DownloadID) -> Job? {
        assertOnEngineThread()
        if let job = jobs[id] { return job }
        let job: Job
        if let queued = schedule.waiting.removeValue(forKey: id) {
            job = Job(id: id, request: queued.request, host: queued.host)
            job.state.continueAfter(attempts: queued.priorAttempts)
        } else if schedule.waitingStored.remove(id.rawValue) {
            return storedJob(id)
        } else {
            return nil
        }
        jobs[id] = job
        if applyState(job) { scheduler.withdraw(id) }
        return job
    }

    private func fireDueTimers() {
        let now = EngineLoop.now()
        while let (due, id, generation) = schedule.timers.first, due <= now {
            _ = schedule.timers.pop()
            // A timer set before a pause and resume is stale: the job has moved on.
            guard let job = jobs[id], job.retryGeneration == generation else { continue }
            feed(job, .retryDue)
        }
        while let (due, id, generation) = schedule.hostTurns.first, due <= now {
            _ = schedule.hostTurns.pop()
            hostTurnCame(id, generation: generation)
        }
        if !disk.fencedPlacements.isEmpty && disk.fenceCheckDue <= now { placeFencedAgain() }
        if robots.awaitsPeers { pollSharedRobots(now: now) }
    }

    private func startQueued() {
        while let id = scheduler.next() {
            if scheduler.resumesHop(id) {
                // A redirect that waited for its host: the same attempt goes on.
                if let job = jobs[id] { startTransfer(job) } else { scheduler.finished(id) }
                continue
            }
            if robotsDefers(id) { continue }
            guard let job = job(id) else {
                scheduler.finished(id)
                continue
            }
            if robotsHolds(job) { continue }
            let actions = job.state.handle(.start)
            if actions.isEmpty {
                scheduler.finished(id)  // not startable any more (cancelled meanwhile)
                continue
            }
            perform(actions, job)
        }
    }

    /// How long the poll may sleep: until the next timer or progress tick, at most 1 s.
    private func pollTimeout() -> Int {
        var wait = 1.0
        let now = EngineLoop.now()
        if let (due, _, _) = schedule.timers.first { wait = min(wait, due - now) }
        if let due = hookCalls.hookDeadlines.nextDue { wait = min(wait, due - now) }
        if let (due, _, _) = schedule.hostTurns.first { wait = min(wait, due - now) }
        if !disk.fencedPlacements.isEmpty { wait = min(wait, disk.fenceCheckDue - now) }
        if !pool.transfers.isEmpty { wait = min(wait, pool.nextProgressTick - now) }
        if let release = pacer?.secondsUntilRelease() { wait = min(wait, release) }
        if !disk.awaitingDurability.isEmpty && !disk.syncInFlight { wait = min(wait, disk.durabilityBatchStarted + 0.02 - now) }
        if let store, store.pendingCount > 0 { wait = min(wait, disk.lastStateCommit + EngineLoop.stateCommitInterval - now) }
        return max(0, Int((wait * 1000).rounded(.up)))
    }

    func emit(_ event: DownloadEvent) { events.publish(event) }
}
