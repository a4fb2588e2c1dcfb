internal import CLua
import Synchronization

/// What the Lua thread is doing, for another thread to read: the deadline of the running
/// outermost call, and the call into Swift it is in, if any. The handler backstop
/// (`HandlerBackstop`) reads it to stop waiting for a call that overran its budget where
/// neither the count hook nor the watchdog can reach it (Swift code behind `dl.*`, which runs
/// with the hook unable to fire).
///
/// While the Lua thread is inside a Swift function it touches no Lua state until it has taken
/// the `inSwift` lock again (`leaveSwift`), so a reader holding the lock may walk that Lua
/// thread's stack to name the script's line (`dl_script_position`).
final class LuaCallMonitor: Sendable {
    /// The Swift function the Lua thread is in: the thread (address) and the function's name.
    struct InSwift {
        var state: UInt = 0
        var name: String?
    }

    /// Counts outermost calls: tells one overdue call from the next.
    private let sequence = Atomic<UInt64>(0)
    /// CLOCK_MONOTONIC deadline of the running outermost call; 0 when none runs. (Atomics:
    /// every handler call sets and clears them, and a lock there cost more than the rest.)
    private let deadline = Atomic<Int64>(0)
    private let budgetBits = Atomic<UInt64>(0)
    private let inSwift = Mutex(InSwift())

    /// A call that overran its deadline by more than the grace.
    struct Overdue: Sendable {
        let sequence: UInt64
        let budget: Double
        /// "job.lua:6", where the script called into Swift; nil when unknown.
        let position: String?
        /// The `dl.*` function it is stuck in; nil when it is not in one.
        let function: String?
    }

    init() {}

    func begin(deadline: Int64, budget: Double) {
        budgetBits.store(budget.bitPattern, ordering: .relaxed)
        sequence.add(1, ordering: .sequentiallyConsistent)
        self.deadline.store(deadline, ordering: .sequentiallyConsistent)
    }

    func end() {
        deadline.store(0, ordering: .sequentiallyConsistent)
    }

    /// The Lua thread `L` enters the Swift function `name`; returns what it was in before.
    func enterSwift(_ L: OpaquePointer, name: String) -> InSwift {
        swap(InSwift(state: UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(L))), name: name))
    }

    /// A Swift function calls back into Lua: not in Swift meanwhile. Returns what to restore.
    func suspendSwift() -> InSwift { swap(InSwift()) }

    /// Back in Lua (or in the Swift function that called back into Lua, `previous`).
    func leaveSwift(_ previous: InSwift) { _ = swap(previous) }

    private func swap(_ value: InSwift) -> InSwift {
        inSwift.withLock { current in
            defer { current = value }
            return current
        }
    }

    /// The running outermost call, when `now` is more than `grace` seconds past its deadline.
    func overdue(grace: Double) -> Overdue? {
        // The sequence read on both sides of the deadline: the deadline is that call's (begin
        // counts before it sets the deadline, end clears it).
        let running = sequence.load(ordering: .sequentiallyConsistent)
        let due = deadline.load(ordering: .sequentiallyConsistent)
        guard due != 0, sequence.load(ordering: .sequentiallyConsistent) == running,
            dl_now_ns() > due + Int64(grace * 1e9)
        else { return nil }
        return inSwift.withLock { s in
            var position: String?
            if s.state != 0, let L = OpaquePointer(bitPattern: s.state) {
                // The Lua thread takes this lock before it touches its state again.
                var buffer = [CChar](repeating: 0, count: 256)
                if dl_script_position(L, &buffer, buffer.count) != 0 {
                    position = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                }
            }
            return Overdue(sequence: running, budget: Double(bitPattern: budgetBits.load(ordering: .relaxed)),
                           position: position, function: s.name)
        }
    }

    /// Whether the outermost call `sequence` is still running.
    func isRunning(_ sequence: UInt64) -> Bool {
        self.sequence.load(ordering: .sequentiallyConsistent) == sequence
            && deadline.load(ordering: .sequentiallyConsistent) != 0
    }
}
