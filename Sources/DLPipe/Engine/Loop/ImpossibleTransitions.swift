import Foundation
import Synchronization

/// Inputs that `JobState` got in a phase that never takes them: bugs in the
/// engine. A debug build stops at the first; a release build goes on with the
/// download's state unchanged, logs the first one on stderr and counts them
/// all, so that none is dropped unseen (and a metric can read `count`).
enum ImpossibleTransitions {
    private static let counter = Atomic<Int>(0)

    /// Impossible inputs seen by this process so far.
    static var count: Int { counter.load(ordering: .relaxed) }

    /// Stops a debug build; in a release build, `record`s.
    static func report(input: JobState.Input, phase: JobState.Phase.Kind) {
        assertionFailure("JobState: \(input) in phase \(phase)")
        record(input: input, phase: phase)
    }

    /// Counts one, and logs it if it is the first (a bug repeated per download
    /// would otherwise flood stderr).
    static func record(input: JobState.Input, phase: JobState.Phase.Kind) {
        let (before, _) = counter.add(1, ordering: .relaxed)
        guard before == 0 else { return }
        let line = "dlpipe: internal error: a download in phase \(phase) got \(input); ignored (further ones are counted, not logged)\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
}
