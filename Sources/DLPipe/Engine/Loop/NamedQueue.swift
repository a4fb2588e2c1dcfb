import Dispatch
import Foundation
import Synchronization

/// Where the engine's work off its thread runs (the syncfs, fdatasync and
/// resume-hash queues), on threads that carry the queue's name. Its blocks are
/// `@Sendable`: they carry Sendable payloads and the engine's inbox, never the loop.
///
/// A serial queue is a thread of its own (`SerialThread`), started with the
/// first block and ended by `end`: its name then shows for as long as the
/// run lasts, whatever GCD does with its pool. A concurrent one is a GCD
/// queue whose pool thread names itself at the start of each block
/// (`ThreadName.enter`): it shows the name of the queue it served last.
struct NamedQueue: Sendable {
    let name: String
    private let kind: Kind

    private enum Kind: Sendable {
        case serial(SerialThread)
        case concurrent(DispatchQueue)
    }

    init(_ name: String, concurrent: Bool = false) {
        precondition(name.utf8.count <= 15, "a thread name longer than Linux keeps: \(name)")
        self.name = name
        kind = concurrent
            ? .concurrent(DispatchQueue(label: name, attributes: .concurrent)) : .serial(SerialThread(name: name))
    }

    func async(_ work: @escaping @Sendable () -> Void) {
        switch kind {
        case .serial(let thread): thread.async(work)
        case .concurrent(let queue):
            let name = name
            queue.async {
                ThreadName.enter(name)
                work()
            }
        }
    }

    /// Waits until every block queued before has run.
    func waitForQueued() {
        switch kind {
        case .serial(let thread): thread.waitForQueued()
        case .concurrent(let queue): queue.sync(flags: .barrier) {}
        }
    }

    /// Lets a serial queue's thread end once its queued blocks have run (at
    /// the engine's stop); a later block starts it again.
    func end() {
        if case .serial(let thread) = kind { thread.end() }
    }
}

/// One named thread that runs blocks in order; it starts with the first block
/// and ends after `end` once nothing is queued.
final class SerialThread: Sendable {
    private struct State {
        var work: [@Sendable () -> Void] = []
        var running = false
        var ending = false
    }
    private let name: String
    private let state = Mutex(State())
    private let signal = DispatchSemaphore(value: 0)

    init(name: String) { self.name = name }

    func async(_ work: @escaping @Sendable () -> Void) {
        let start = state.withLock { state -> Bool in
            state.work.append(work)
            state.ending = false
            defer { state.running = true }
            return !state.running
        }
        if start {
            let thread = Thread { [self] in
                ThreadName.set(name)
                loop()
            }
            thread.stackSize = 256 << 10
            thread.start()
        }
        signal.signal()
    }

    func waitForQueued() {
        guard state.withLock({ $0.running }) else { return }
        let done = DispatchSemaphore(value: 0)
        async { done.signal() }
        done.wait()
    }

    func end() {
        let running = state.withLock { state -> Bool in
            state.ending = true
            return state.running
        }
        if running { signal.signal() }
    }

    private func loop() {
        while true {
            signal.wait()
            let work = state.withLock { state -> [@Sendable () -> Void]? in
                if state.work.isEmpty && state.ending {
                    state.running = false
                    return nil
                }
                defer { state.work = [] }
                return state.work
            }
            guard let work else { return }
            for block in work { block() }
        }
    }
}
