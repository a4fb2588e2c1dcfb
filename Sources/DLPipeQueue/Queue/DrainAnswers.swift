import DLPipe
import Synchronization

/// How a shared queue's worker answers its engine's `drained` calls.
///
/// The engine asks when nothing is open in it. The claim loop answers nil
/// when it handed the engine more claims (the engine asks again at its next
/// drain), or the run's exit code once the job's run has ended. That code is
/// final: it answers the call waiting now and every later one at once.
///
/// A later call does come. A call the engine made while claims it had not
/// taken in yet sat in its inbox waits until those downloads end and the run
/// ends; its answer then finds a new drain opened by those adds, and the
/// engine asks once more. Answering that call only when it was the one
/// waiting left the worker's run without an end, one run in ten with
/// `--settle 0` (docs/architecture.md, "A run that does not end").
package final class DrainAnswers: Sendable {
    private struct State {
        /// The engine's drained call that waits for its answer.
        var waiting: (@Sendable (Int?) -> Void)?
        /// The run's exit code, once the run ended.
        var finalCode: Int?
    }
    private let state = Mutex(State())

    package init() {}

    /// The engine's drained call: answered at once with the run's code when
    /// the run has ended (true), else kept for `answer` (false).
    package func ask(_ reply: @escaping @Sendable (Int?) -> Void) -> Bool {
        let final = state.withLock { state -> Int? in
            DrainTrace.note("worker: engine asks drained; finalCode=\(String(describing: state.finalCode)) replyWaiting=\(state.waiting != nil)")
            if state.finalCode == nil { state.waiting = reply }
            return state.finalCode
        }
        guard let final else { return false }
        reply(final)
        return true
    }

    /// Whether a drained call waits for its answer.
    package var isAsked: Bool { state.withLock { $0.waiting != nil } }

    /// Answers the waiting call, if one waits: nil when the engine was given
    /// more downloads, or the run's exit code, which is then kept for every
    /// later call.
    package func answer(_ code: Int?) {
        let reply = state.withLock { state -> (@Sendable (Int?) -> Void)? in
            if let code { state.finalCode = code }
            DrainTrace.note("worker: answerDrain \(String(describing: code)) replyWaiting=\(state.waiting != nil)")
            return state.waiting.take()
        }
        reply?(code)
    }
}
