import Testing

@testable import DLPipeQueue

/// Every phase x input pair of a claim's life (`ClaimLife`) in a worker of a
/// shared queue: each one moves the claim to the phase written below, is a
/// late input that changes nothing, or is impossible (which
/// `QueueWorker.State.apply` reports: `ImpossibleClaimInputs`). A pair that
/// changes class or target fails here.
@Suite struct ClaimLifeTableTests {
    /// A claim in each phase, reached through the inputs the worker sends
    /// from where `holdClaims` puts it (held ahead, or in the engine).
    static let phaseRoutes: [(name: String, start: ClaimLife.Phase, inputs: [ClaimLife.Input])] = [
        ("ahead", .ahead, []),
        ("stranded", .ahead, [.stranded]),
        ("inEngine", .inEngine(taking: false), []),
        ("inEngine, taking", .ahead, [.handedOver]),
        ("transferEnded, giving", .inEngine(taking: false), [.transferEnded(at: 1)]),
        ("transferEnded", .inEngine(taking: false), [.transferEnded(at: 1), .slotGiven]),
    ]

    /// Each pause mark, reached from `running` through the inputs the worker sends.
    static let pauseRoutes: [(name: String, inputs: [ClaimLife.Input])] = [
        ("running", []),
        ("paused", [.pause]),
        ("parked", [.pause, .park]),
        ("unparking", [.pause, .park, .resume]),
        ("pausedUnparking", [.pause, .park, .resume, .pause]),
        ("parkedUnparking", [.pause, .park, .resume, .pause, .park]),
    ]

    static func name(_ phase: ClaimLife.Phase) -> String {
        switch phase {
        case .ahead: "ahead"
        case .stranded: "stranded"
        case .inEngine(let taking): taking ? "inEngine, taking" : "inEngine"
        case .transferEnded(let giving, _): giving ? "transferEnded, giving" : "transferEnded"
        }
    }

    /// Every input; the switch makes a new input fail to compile here until it is in the table.
    static let inputs: [(name: String, input: ClaimLife.Input)] = {
        let all: [ClaimLife.Input] = [
            .handedOver, .stranded, .promoted, .transferEnded(at: 2), .slotGiven, .slotTaken, .pause, .resume, .park,
            .unparked,
        ]
        return all.map { input in
            let name = switch input {
            case .handedOver: "handedOver"
            case .stranded: "stranded"
            case .promoted: "promoted"
            case .transferEnded: "transferEnded"
            case .slotGiven: "slotGiven"
            case .slotTaken: "slotTaken"
            case .pause: "pause"
            case .resume: "resume"
            case .park: "park"
            case .unparked: "unparked"
            }
            return (name, input)
        }
    }()

    /// The written table, by input: from which phase (or pause mark) it moves
    /// the claim and to where, and where it comes late; everywhere else it is
    /// impossible. Phase inputs leave the pause mark alone and pause inputs
    /// the phase.
    static let table: [String: (moves: [String: String], late: Set<String>)] = [
        "handedOver": (["ahead": "inEngine, taking"], []),
        "stranded": (["ahead": "stranded"], []),
        "promoted": (["stranded": "inEngine"], []),
        // A slot handed over and not taken yet is not given back by this row.
        "transferEnded": (["inEngine": "transferEnded, giving", "inEngine, taking": "transferEnded"],
                          ["transferEnded, giving", "transferEnded"]),
        "slotGiven": (["transferEnded, giving": "transferEnded"], []),
        "slotTaken": (["inEngine, taking": "inEngine"], []),
        "pause": (["running": "paused", "unparking": "pausedUnparking"],
                  ["paused", "parked", "pausedUnparking", "parkedUnparking"]),
        "resume": (["paused": "running", "parked": "unparking", "pausedUnparking": "unparking",
                    "parkedUnparking": "unparking"], ["running", "unparking"]),
        "park": (["paused": "parked", "pausedUnparking": "parkedUnparking"], []),
        "unparked": (["unparking": "running", "pausedUnparking": "paused", "parkedUnparking": "parked"], []),
    ]

    static func life(_ phase: (name: String, start: ClaimLife.Phase, inputs: [ClaimLife.Input]),
                     _ pause: (name: String, inputs: [ClaimLife.Input])) -> ClaimLife {
        var life = ClaimLife(token: 7, host: "a.test", phase: phase.start)
        for input in phase.inputs + pause.inputs { #expect(life.step(input) == .moved, "route \(phase.name), \(pause.name)") }
        return life
    }

    @Test func everyRouteReachesItsPhase() {
        for phase in Self.phaseRoutes {
            for pause in Self.pauseRoutes {
                let life = Self.life(phase, pause)
                #expect(Self.name(life.phase) == phase.name && "\(life.pause)" == pause.name)
            }
        }
        #expect(Set(Self.pauseRoutes.map(\.name)) == Set(ClaimLife.Pause.allCases.map { "\($0)" }))
        #expect(Set(Self.inputs.map(\.name)) == Set(Self.table.keys))
    }

    @Test func everyPhaseAndInputPairIsAMoveALateInputOrImpossible() {
        for phase in Self.phaseRoutes {
            for pause in Self.pauseRoutes {
                for (kind, input) in Self.inputs {
                    guard let row = Self.table[kind] else { continue }
                    let before = Self.life(phase, pause)
                    var after = before
                    let step = after.step(input)
                    let isPause = [.pause, .resume, .park, .unparked].contains(input)
                    let from = isPause ? pause.name : phase.name
                    let what = "\(kind) in \(phase.name), \(pause.name)"
                    let reached = isPause ? "\(after.pause)" : Self.name(after.phase)
                    if let target = row.moves[from] {
                        #expect(step == .moved && reached == target, "\(what): \(step) to \(reached)")
                    } else {
                        #expect(step == (row.late.contains(from) ? .late : .impossible), "\(what): \(step)")
                        #expect(reached == from, "\(what) changed the claim")
                    }
                    // The other half of the life stays as it was.
                    if isPause { #expect(after.phase == before.phase, "\(what)") } else { #expect(after.pause == before.pause, "\(what)") }
                    #expect(after.token == before.token && after.host == before.host)
                }
            }
        }
    }

    /// What the worker's counts read from a life: a slot its transfer uses
    /// (`transferring`), a slot its end gives back (`endSlots`), its row
    /// while held ahead (what a cancel reports).
    @Test func aClaimsSlotAndRowFollowItsPhase() {
        let row = ClaimedDownload(
            id: 1, token: 7, key: [], url: "http://a.test/1", host: "a.test", priority: 0, request: "{}", secret: nil,
            attempts: 1, perHost: nil)
        var life = ClaimLife(token: 7, host: "a.test", phase: .ahead, row: row)
        #expect(life.row == row && !life.holdsSlot && !life.endGivesSlot)
        #expect(life.step(.handedOver) == .moved)
        #expect(life.row == nil && life.holdsSlot && !life.endGivesSlot, "the slot handed over is the giver's row's")
        #expect(life.step(.slotTaken) == .moved && life.endGivesSlot)
        #expect(life.step(.transferEnded(at: 3)) == .moved && !life.holdsSlot && life.endGivesSlot)
        #expect(life.phase == .transferEnded(giving: true, at: 3))
        #expect(life.step(.slotGiven) == .moved && !life.endGivesSlot)
    }

    /// An impossible input in a release build: counted (readable for a
    /// metric), the claim unchanged. A debug build stops at `report` instead.
    @Test func impossibleInputsAreCounted() {
        let before = ImpossibleClaimInputs.count
        let life = ClaimLife(token: 7, host: "a.test", phase: .ahead)
        ImpossibleClaimInputs.record(.slotGiven, life)
        ImpossibleClaimInputs.record(.promoted, life)
        #expect(ImpossibleClaimInputs.count >= before + 2)
    }
}
