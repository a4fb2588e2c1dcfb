internal import CLua
import Synchronization

/// What the Lua thread is doing, for another thread to read: the deadline of the running
/// outermost call, and the call into Swift it is in, if any. The handler backstop
/// (`HandlerBackstop`) reads it to stop waiting for a call that overran its budget where
/// neither the count hook nor the watchdog can reach it (Swift code behind `dl.*`, which runs
/// with the hook unable to fire).
///
/// While the Lua thread is inside a Swift function it touches no Lua state until it has taken
/// this lock again (`leaveSwift`), so a reader holding the lock may walk that Lua thread's
/// stack to name the script's line (`dl_script_position`).
final class LuaCallMonitor: Sendable {
    struct State {
        /// Counts outermost calls: tells one overdue call from the next.
        var sequence: UInt64 = 0
        /// CLOCK_MONOTONIC deadline of the running outermost call; 0 when none runs.
        var deadline: Int64 = 0
        var budget: Double = 0
        /// The Lua thread (address) and the function, while a call into Swift runs.
        var swiftState: UInt = 0
        var swiftName: String?
    }

    /// A call that overran its deadline by more than the grace.
    struct Overdue: Sendable {
        let sequence: UInt64
        let budget: Double
        /// "job.lua:6", where the script called into Swift; nil when unknown.
        let position: String?
        /// The `dl.*` function it is stuck in; nil when it is not in one.
        let function: String?
    }

    private let state = Mutex(State())

    init() {}

    func begin(deadline: Int64, budget: Double) {
        state.withLock {
            $0.sequence &+= 1
            $0.deadline = deadline
            $0.budget = budget
            $0.swiftState = 0
            $0.swiftName = nil
        }
    }

    func end() {
        state.withLock {
            $0.deadline = 0
            $0.swiftState = 0
            $0.swiftName = nil
        }
    }

    /// The Lua thread `L` enters the Swift function `name`; returns what it was in before.
    func enterSwift(_ L: OpaquePointer, name: String) -> (UInt, String?) {
        swap((UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(L))), name))
    }

    /// A Swift function calls back into Lua: not in Swift meanwhile. Returns what to restore.
    func suspendSwift() -> (UInt, String?) { swap((0, nil)) }

    /// Back in Lua (or in the Swift function that called back into Lua, `previous`).
    func leaveSwift(_ previous: (UInt, String?)) { _ = swap(previous) }

    private func swap(_ value: (UInt, String?)) -> (UInt, String?) {
        state.withLock { s in
            let previous = (s.swiftState, s.swiftName)
            s.swiftState = value.0
            s.swiftName = value.1
            return previous
        }
    }

    /// The running outermost call, when `now` is more than `grace` seconds past its deadline.
    func overdue(grace: Double) -> Overdue? {
        state.withLock { s in
            let now = dl_now_ns()
            guard s.deadline != 0, now > s.deadline + Int64(grace * 1e9) else { return nil }
            var position: String?
            if s.swiftState != 0, let L = OpaquePointer(bitPattern: s.swiftState) {
                // The Lua thread waits on this lock before it touches its state again.
                var buffer = [CChar](repeating: 0, count: 256)
                if dl_script_position(L, &buffer, buffer.count) != 0 {
                    position = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                }
            }
            return Overdue(sequence: s.sequence, budget: s.budget, position: position, function: s.swiftName)
        }
    }

    /// Whether the outermost call `sequence` is still running.
    func isRunning(_ sequence: UInt64) -> Bool {
        state.withLock { $0.sequence == sequence && $0.deadline != 0 }
    }
}
