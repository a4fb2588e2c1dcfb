import Foundation
import Testing
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
        let count = HeldFile.sliceSize * 2 + 5
        let files = (0..<count).map { HeldFile(directory: "sub", name: "f\($0)", bytes: [UInt8(truncatingIfNeeded: $0)]) }
        HeldFile.place(files, in: output, syncAnyway: false)
        #expect(files.allSatisfy { if case .linked = $0.current { true } else { false } })
        #expect(names("sub").count == count)
        #expect(contents("sub/f130") == [130])
    }
}
