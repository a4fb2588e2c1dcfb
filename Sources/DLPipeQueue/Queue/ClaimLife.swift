import DLPipe
import Foundation
import Synchronization

/// Where one claim this worker holds is in its life, from its claim to its
/// end: a pure value, moved only by `step`. A claim that ends (reported,
/// handed back, released to the queue) leaves `QueueWorker.State.claims`;
/// its `ClaimEnd` then waits in `State.ends` for the report.
///
/// Two parts, each moved by its own inputs: the `phase` (the host slot: held
/// ahead without one, in the engine on one, transfer ended) and the `pause`
/// mark (paused in the engine, parked in the queue, a resume on its way).
struct ClaimLife {
    enum Phase: Equatable {
        /// Held ahead in its host's line (`State.ahead`), no slot, not in
        /// the engine: waits for a transfer of its host to hand one over.
        case ahead
        /// Out of its host's line with no slot: the next cycle's statement
        /// gives it one (`promoted`) or takes it back (the claim ends).
        case stranded
        /// In the engine on a host slot (transferring or waiting there for a
        /// transfer). `taking`: a slot handed over that its row takes with
        /// the next report.
        case inEngine(taking: Bool)
        /// Its transfer ended (its file may wait for its batch) at `at`,
        /// monotonic time. `giving`: its slot goes back with the next report.
        case transferEnded(giving: Bool, at: Double)
    }

    /// Paused in the engine, parked in the queue (its row shows it paused),
    /// and unparking (resumed from parked: its row goes back to running
    /// with the next cycle), as the combinations that occur.
    enum Pause: Equatable, CaseIterable {
        case running, paused, parked, unparking, pausedUnparking, parkedUnparking

        var isPaused: Bool { self == .paused || self == .parked || self == .pausedUnparking || self == .parkedUnparking }
        var isParked: Bool { self == .parked || self == .parkedUnparking }
        var isUnparking: Bool { self == .unparking || self == .pausedUnparking || self == .parkedUnparking }
    }

    enum Input: Equatable {
        /// A transfer of its host handed its slot over (or a free one): it starts.
        case handedOver
        /// Its host has no transfer of this worker left, or claims ahead give way.
        case stranded
        /// The queue gave the stranded claim a slot: it starts.
        case promoted
        /// The engine says its transfer ended, at monotonic time `at`.
        case transferEnded(at: Double)
        /// The report that gives its slot back went out.
        case slotGiven
        /// The report in which its row takes the slot handed over went out.
        case slotTaken
        /// Paused or resumed in the engine.
        case pause, resume
        /// Its row was marked paused in the queue (`parkIfAllPaused`).
        case park
        /// The statement that marks its row running again went out.
        case unparked
    }

    /// What an input did: moved the claim, came late (changes nothing: the
    /// claim is already past it), or is impossible (a bug of the worker).
    enum Step: Equatable { case moved, late, impossible }

    let token: Int64
    /// Its host, as the queue's row names it.
    let host: String
    private(set) var phase: Phase
    private(set) var pause: Pause = .running
    /// The queue's row while held ahead: what a cancel of it reports.
    private(set) var row: ClaimedDownload?

    init(token: Int64, host: String, phase: Phase, row: ClaimedDownload? = nil) {
        self.token = token
        self.host = host
        self.phase = phase
        self.row = phase == .ahead ? row : nil
    }

    /// Whether it holds a host slot its own transfer uses (what `transferring` counts).
    var holdsSlot: Bool { if case .inEngine = phase { true } else { false } }

    /// Whether its end gives a host slot back in its report: the slot it
    /// transferred on (its own row's), or one noted to go back. A slot
    /// handed over and not taken yet is given back by the row it came from.
    var endGivesSlot: Bool {
        switch phase {
        case .inEngine(let taking): !taking
        case .transferEnded(let giving, _): giving
        case .ahead, .stranded: false
        }
    }

    mutating func step(_ input: Input) -> Step {
        switch input {
        case .pause, .resume, .park, .unparked: stepPause(input)
        default: stepPhase(input)
        }
    }

    private mutating func stepPhase(_ input: Input) -> Step {
        switch (phase, input) {
        case (.ahead, .handedOver): phase = .inEngine(taking: true)
        case (.ahead, .stranded): phase = .stranded
        case (.stranded, .promoted): phase = .inEngine(taking: false)
        // A slot handed over and not taken yet: the row it came from gives it back.
        case (.inEngine(let taking), .transferEnded(let at)): phase = .transferEnded(giving: !taking, at: at)
        case (.transferEnded, .transferEnded): return .late
        case (.transferEnded(giving: true, let at), .slotGiven): phase = .transferEnded(giving: false, at: at)
        case (.inEngine(taking: true), .slotTaken): phase = .inEngine(taking: false)
        default: return .impossible
        }
        if phase != .ahead { row = nil }
        return .moved
    }

    private mutating func stepPause(_ input: Input) -> Step {
        switch (pause, input) {
        case (.running, .pause): pause = .paused
        case (.unparking, .pause): pause = .pausedUnparking
        case (.paused, .pause), (.parked, .pause), (.pausedUnparking, .pause), (.parkedUnparking, .pause): return .late
        case (.paused, .resume): pause = .running
        case (.parked, .resume), (.pausedUnparking, .resume), (.parkedUnparking, .resume): pause = .unparking
        case (.running, .resume), (.unparking, .resume): return .late
        case (.paused, .park): pause = .parked
        case (.pausedUnparking, .park): pause = .parkedUnparking
        case (.unparking, .unparked): pause = .running
        case (.pausedUnparking, .unparked): pause = .paused
        case (.parkedUnparking, .unparked): pause = .parked
        default: return .impossible
        }
        return .moved
    }
}

/// Inputs a claim got in a phase that never takes them: bugs in the worker.
/// A debug build stops at the first; a release build goes on with the claim
/// unchanged, logs the first one on stderr and counts them all (`count`,
/// for a metric), as the engine's `ImpossibleTransitions` does for a download.
package enum ImpossibleClaimInputs {
    private static let counter = Atomic<Int>(0)

    /// Impossible inputs seen by this process so far.
    package static var count: Int { counter.load(ordering: .relaxed) }

    static func report(_ input: ClaimLife.Input, _ life: ClaimLife) {
        assertionFailure("ClaimLife: \(input) in phase \(life.phase), \(life.pause)")
        record(input, life)
    }

    static func record(_ input: ClaimLife.Input, _ life: ClaimLife) {
        let (before, _) = counter.add(1, ordering: .relaxed)
        guard before == 0 else { return }
        let line = "dlpipe: internal error: a claim in phase \(life.phase), \(life.pause) got \(input); ignored (further ones are counted, not logged)\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
}

extension ClaimLife.Phase {
    /// Its transfer ended and its slot goes back with the next report.
    var isGiving: Bool { if case .transferEnded(giving: true, _) = self { true } else { false } }
}
