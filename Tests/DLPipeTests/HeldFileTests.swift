import Foundation
import Testing
import Synchronization
import TestSupport

@testable import DLPipe

/// Whole bodies written as unnamed files and linked after the batch's syncfs:
/// names never clobber, a withdrawn body leaves nothing, failures are reported.
@Suite struct HeldFileTests {
    let root: String
    let output: OutputDirectory

    init() throws {
        let path = try TempDir.make("held")
        try FileManager.default.createDirectory(atPath: path + "/sub", withIntermediateDirectories: true)
        root = path
        output = OutputDirectory(root: path)
    }

    private func contents(_ relative: String) -> [UInt8]? {
        FileManager.default.contents(atPath: root + "/" + relative).map { [UInt8]($0) }
    }

    private func names(_ relative: String = "") -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: root + "/" + relative)) ?? []).sorted()
    }

    @Test func isSupportedOnTheTestDirectory() {
        #expect(HeldFile.supported(in: output), "tmp file systems have O_TMPFILE; the engine tests rely on it")
    }

    @Test func aBatchIsWrittenAndNamedInItsDirectories() {
        let top = HeldFile(directory: "", name: "a.bin", bytes: [1, 2, 3])
        let nested = HeldFile(directory: "sub", name: "b.bin", bytes: Array(repeating: 7, count: 100_000))
        let empty = HeldFile(directory: "", name: "empty", bytes: [])
        HeldFile.place([top, nested, empty], in: output, syncAnyway: false)
        #expect(top.current == .linked("a.bin"))
        #expect(nested.current == .linked("b.bin"))
        #expect(empty.current == .linked("empty"))
        #expect(contents("a.bin") == [1, 2, 3])
        #expect(contents("sub/b.bin") == Array(repeating: 7, count: 100_000))
        #expect(contents("empty") == [])
    }

    @Test func aNameTakenMeanwhileIsNeverReplaced() throws {
        try Data("someone else's".utf8).write(to: URL(fileURLWithPath: root + "/report.pdf"))
        let file = HeldFile(directory: "", name: "report.pdf", bytes: [9])
        HeldFile.place([file], in: output, syncAnyway: false)
        #expect(file.current == .linked("report.1.pdf"))
        #expect(contents("report.pdf") == Array("someone else's".utf8))
        #expect(contents("report.1.pdf") == [9])
    }

    /// A numbered name (`report.1.pdf`, the wanted one was taken) that is
    /// taken too by the time of the link goes on to `report.2.pdf`, the next
    /// free variant of the wanted name, never to `report.1.1.pdf`.
    @Test func aNumberedNameTakenMeanwhileTakesTheWantedNamesNextNumber() throws {
        for name in ["report.pdf", "report.1.pdf"] {
            try Data("someone else's".utf8).write(to: URL(fileURLWithPath: root + "/" + name))
        }
        let file = HeldFile(directory: "", name: "report.1.pdf", wanted: "report.pdf", bytes: [9])
        HeldFile.place([file], in: output, syncAnyway: false)
        #expect(file.current == .linked("report.2.pdf"))
        #expect(contents("report.1.pdf") == Array("someone else's".utf8))
        #expect(contents("report.2.pdf") == [9])
        #expect(names() == ["report.1.pdf", "report.2.pdf", "report.pdf", "sub"])
    }

    @Test func aWithdrawnFileLeavesNothingAndALinkedOneCannotBeWithdrawn() {
        let withdrawn = HeldFile(directory: "", name: "gone.bin", bytes: [1])
        #expect(withdrawn.withdraw())
        let kept = HeldFile(directory: "", name: "kept.bin", bytes: [2])
        HeldFile.place([withdrawn, kept], in: output, syncAnyway: true)
        #expect(withdrawn.current == .withdrawn)
        #expect(kept.current == .linked("kept.bin"))
        #expect(!kept.withdraw(), "on disk under its name: too late")
        #expect(kept.current == .linked("kept.bin"))
        #expect(names() == ["kept.bin", "sub"], "no trace of the withdrawn body")
    }

    @Test func aMissingDirectoryIsAFailureWithItsReason() {
        let file = HeldFile(directory: "nowhere", name: "x.bin", bytes: [1])
        HeldFile.place([file], in: output, syncAnyway: false)
        #expect(file.current == .failed("cannot create", ENOENT))
        #expect(names() == ["sub"])
    }

    @Test func refusedLinksAreReportedAsUnsupportedAndLeaveNothing() {
        let file = HeldFile(directory: "", name: "x.bin", bytes: [1, 2])
        HeldFile.place([file], in: output, syncAnyway: false, refusingLinks: true)
        #expect(file.current == .unsupported)
        #expect(names() == ["sub"], "an unnamed file that is never linked vanishes")
    }

    @Test func batchesLargerThanASliceAreAllPlaced() {
        let count = 8 * 2 + 5
        let files = (0..<count).map { HeldFile(directory: "sub", name: "f\($0)", bytes: [UInt8(truncatingIfNeeded: $0)]) }
        HeldFile.place(files, in: output, syncAnyway: false, sliceSize: 8)
        #expect(files.allSatisfy { if case .linked = $0.current { true } else { false } })
        #expect(names("sub").count == count)
        #expect(contents("sub/f20") == [20])
    }

    @Test func aBatchOfManyFilesTakesTheSlicesItsDescriptorsAllow() {
        let count = 300
        let files = (0..<count).map { HeldFile(directory: "sub", name: "f\($0)", bytes: [UInt8(truncatingIfNeeded: $0)]) }
        HeldFile.place(files, in: output, syncAnyway: false)
        #expect(files.allSatisfy { if case .linked = $0.current { true } else { false } })
        #expect(names("sub").count == count)
    }

    @Test func whatRunsBeforeLinkingMayStillRefuseTheBatch() {
        let files = (0..<3).map { HeldFile(directory: "", name: "r\($0).bin", bytes: [UInt8($0)]) }
        let calls = Mutex(0)
        HeldFile.place(files, in: output, syncAnyway: true, sliceSize: 2) {
            calls.withLock { $0 += 1 }
            #expect(names() == ["sub"], "no link before it")
            HeldFile.refuse(files, because: "the records did not commit")
        }
        #expect(calls.withLock { $0 } == 1, "once per batch, not per slice")
        #expect(files.allSatisfy { $0.current == .notRecorded("the records did not commit") })
        #expect(names() == ["sub"], "refused files are never linked")
    }

    @Test func slicesUseHalfTheDescriptorsLeftWithinBounds() {
        // The common soft limit of 1,024 with a run's sockets open: room for hundreds.
        #expect(HeldFile.sliceSize(limit: 1024, inUse: 100) == 430)
        #expect(HeldFile.sliceSize(limit: 20_000, inUse: 100) == 1024, "no more than 1,024 at once")
        #expect(HeldFile.sliceSize(limit: 1024, inUse: 1000) == 64, "never fewer than 64: the limit was checked at the start")
    }
    // MARK: the lease fence of a shared queue's worker

    /// The fence's answers, in turn (the last one again when they run out),
    /// and how often it was asked.
    private final class Fence: Sendable {
        private let state: Mutex<(answers: [Bool], asked: Int)>
        init(_ answers: [Bool]) { state = Mutex((answers, 0)) }
        var asked: Int { state.withLock { $0.asked } }
        func mayPlace() -> Bool {
            state.withLock { state in
                state.asked += 1
                return state.answers.count > 1 ? state.answers.removeFirst() : state.answers[0]
            }
        }
    }

    @Test func aWorkerWhoseLeaseIsNotSureLinksNothing() {
        let fence = Fence([false])
        let file = HeldFile(directory: "", name: "x.bin", bytes: [1, 2])
        HeldFile.place([file], in: output, syncAnyway: true, mayPlace: fence.mayPlace)
        #expect(file.current == .fenced)
        #expect(fence.asked == 1, "the fence is asked right before the link")
        #expect(names() == ["sub"], "nothing under any name: the engine writes it as a part file")
    }

    @Test func aWorkerWhoseLeaseHoldsLinksAsWithoutAQueue() {
        let file = HeldFile(directory: "sub", name: "y.bin", bytes: [3])
        HeldFile.place([file], in: output, syncAnyway: false, mayPlace: { true })
        #expect(file.current == .linked("y.bin"))
        #expect(contents("sub/y.bin") == [3])
    }

    @Test func aNameTakenWhileTheLeaseWentUnsureGetsNoNumberedCopy() throws {
        // The name is taken (most likely by the worker that took the download
        // over) and the lease is no longer sure by then: no `name.1.ext`.
        try Data("the new holder's".utf8).write(to: URL(fileURLWithPath: root + "/z.bin"))
        let fence = Fence([true, false])
        let file = HeldFile(directory: "", name: "z.bin", bytes: [4])
        HeldFile.place([file], in: output, syncAnyway: false, mayPlace: fence.mayPlace)
        #expect(file.current == .fenced)
        #expect(fence.asked == 2, "asked before the link, and again when the name was taken")
        #expect(names() == ["sub", "z.bin"])
        #expect(contents("z.bin") == Array("the new holder's".utf8))
    }
}
