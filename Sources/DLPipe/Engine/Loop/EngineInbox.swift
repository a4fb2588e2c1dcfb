import Foundation
import Synchronization

/// The engine's side that other threads may hold: `post`, the wake-up of the
/// engine thread's poll, and the counters tests and callers read. Everything
/// else (the jobs, the scheduler, curl) is in `EngineLoop`, which is made on
/// the engine thread, lives there, and is not Sendable: the compiler checks
/// that no closure or value sent elsewhere reaches it
/// (docs/design/engine-confinement.md).
///
/// `DownloadEngine`, hook replies, and the work sent to other threads (the
/// sync, fdatasync and resume-hash queues, the state thread) hold this, never
/// the loop; their results come back as commands.
final class EngineInbox: Sendable {
    private let box = Mutex<Inbox>(Inbox())
    /// True while the loop is in (or about to enter) `curl_multi_poll`: only then
    /// does a command need a wake-up. A loop that is awake takes the inbox at
    /// the start of its next turn anyway.
    private let sleeping = Atomic<Bool>(false)
    /// The loop's multi handle, for `curl_multi_wakeup` only. Held here too, so
    /// that a late `post` never wakes a handle the ended loop has freed.
    let multiHandle = CurlMultiHandle()
    /// Held bodies a stop took back before their link: read by tests (any
    /// thread) to see that the withdrawal path ran; written on the rare stop.
    let heldBodiesWithdrawn = Atomic<Int>(0)
    /// Held bodies a shared queue's worker did not link because its lease was
    /// not sure (they went to part files): read by tests, like the above.
    let heldBodiesFenced = Atomic<Int>(0)
    /// Hook replies dropped: second replies, and replies after the deadline
    /// (read by `DownloadEngine.ignoredHookReplies`, from any thread).
    let ignoredHookReplies = Atomic<Int>(0)

    /// Starts the engine thread, which makes its loop with `make` and runs it.
    /// Returns once the loop is made; throws what `make` threw (then no
    /// thread is left running).
    func start(_ make: @escaping @Sendable (EngineInbox) throws(DownloadError) -> EngineLoop) throws(DownloadError) {
        let made = StartReport()
        let thread = Thread { [self] in
            // Foundation's `Thread.name` does not reach the kernel here: named
            // by the thread itself, it shows in ps, top and debuggers.
            ThreadName.set("dlpipe-engine")
            let loop: EngineLoop
            do throws(DownloadError) {
                loop = try make(self)
            } catch {
                return made.report(error)
            }
            made.report(nil)
            loop.run()
        }
        thread.stackSize = 1 << 20
        thread.start()
        if let failure = made.wait() { throw failure }
    }

    /// Queues a command for the loop thread and wakes it. Safe from any thread.
    ///
    /// Only the command that finds the inbox empty wakes the loop, and only when
    /// the loop sleeps: a wake-up sent for an earlier command is still pending
    /// and the loop takes the whole inbox when it comes. Adding 100,000 URLs thus
    /// costs one wake-up, not 100,000, and hook replies that arrive while the
    /// loop works cost none. (The loop sets `sleeping` before it looks at the
    /// inbox a last time, and a poster appends before it reads `sleeping`, so
    /// one of the two always sees the other.)
    ///
    /// After the loop has ended, the command is answered at once on the
    /// caller's thread, as `AfterStop` says: no call waits for a loop that is gone.
    func post(_ command: EngineLoop.Command) {
        let (wasEmpty, answer) = box.withLock { box -> (Bool, AfterStop.Reply?) in
            if box.afterStop != nil { return (false, box.afterStop!.answer(command)) }
            box.commands.append(command)
            return (box.commands.count == 1, nil)
        }
        answer?()
        if wasEmpty && sleeping.load(ordering: .sequentiallyConsistent) { multiHandle.wakeup() }
    }

    /// The commands queued since the last call (engine thread).
    func take() -> [EngineLoop.Command] {
        box.withLock { box in
            defer { box.commands = [] }
            return box.commands
        }
    }

    /// Polls curl until a socket, a timeout or a command wakes the loop (engine thread).
    func sleep(polling multi: CurlMulti, milliseconds: Int) {
        sleeping.store(true, ordering: .sequentiallyConsistent)
        if box.withLock({ $0.commands.isEmpty }) { multi.poll(milliseconds: milliseconds) }
        sleeping.store(false, ordering: .sequentiallyConsistent)
    }

    /// Ends the loop's side: from now on commands are answered by `afterStop`
    /// at once. Returns the commands that came before, to be answered so too.
    func close(_ afterStop: AfterStop) -> [EngineLoop.Command] {
        box.withLock { box in
            box.afterStop = afterStop
            defer { box.commands = [] }
            return box.commands
        }
    }

    /// Answers a command as the stopped engine does (after `close`).
    func answerAfterStop(_ command: EngineLoop.Command) {
        box.withLock { $0.afterStop!.answer(command) }?()
    }
}

/// Whether the engine thread made its loop: reported once by that thread,
/// waited for once by the one that started it.
private final class StartReport: Sendable {
    private let failure = Mutex<DownloadError??>(nil)
    private let done = DispatchSemaphore(value: 0)

    func report(_ error: DownloadError?) {
        failure.withLock { $0 = .some(error) }
        done.signal()
    }

    func wait() -> DownloadError? {
        done.wait()
        return failure.withLock { $0 ?? nil }
    }
}
