import Foundation
import Testing
import TestSupport

@testable import DLPipe

/// The one owner of names: the taken rule, holds that move with a download,
/// and a disk that knows more than the index.
@Suite struct TargetRegistryTests {
    let root: String
    let output: OutputDirectory

    init() throws {
        let path = NSTemporaryDirectory() + "dlpipe-targets-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path + "/sub", withIntermediateDirectories: true)
        root = path
        output = OutputDirectory(root: path)
    }

    private func create(_ relative: String) throws {
        try TestFiles.create(root + "/" + relative, Data([1]))
    }

    private func target(_ relative: String) -> TargetPath {
        let parts = relative.split(separator: "/").map(String.init)
        return TargetPath(directory: parts.dropLast().joined(separator: "/"), name: parts.last!)
    }

    @Test func aNameIsTakenByAHoldAFileOrAPartFile() throws {
        try create("file.bin")
        try create("sub/partial.bin.part")
        let targets = TargetRegistry(output: output)
        #expect(targets.isTaken("file.bin"))
        #expect(targets.isTaken("sub/partial.bin"), "a part file holds its final name")
        #expect(!targets.isTaken("free.bin"))
        #expect(targets.reserveFree(target("free.bin")).relative == "free.bin")
        #expect(targets.isTaken("free.bin"), "held by the download that reserved it")
        #expect(targets.reserveFree(target("free.bin")).relative == "free.1.bin", "the next download moves aside")
        #expect(targets.reserveFree(target("sub/partial.bin")).relative == "sub/partial.1.bin")
    }

    @Test func aMoveHoldsTheNewNameBeforeItLetsTheOldOneGo() {
        let targets = TargetRegistry(output: output)
        let first = targets.reserveFree(target("a.txt"))
        // The same wanted name: the download's own hold counts as taken.
        let moved = targets.move(from: first, to: target("a.txt"))
        #expect(moved.relative == "a.1.txt")
        #expect(!targets.isTaken("a.txt"), "the old name is let go")
        #expect(targets.reserveExactly(target("a.txt")))
        #expect(!targets.reserveExactly(target("a.1.txt")), "another download holds it")
        targets.release(moved)
        #expect(targets.reserveExactly(target("a.1.txt")))
    }

    @Test func aFolderIsReadAgainWhenTheDiskDisagrees() throws {
        let targets = TargetRegistry(output: output)
        #expect(!targets.isTaken("sub/late.bin"))  // the folder is read now
        try create("sub/late.bin")  // another program, after the read
        #expect(!targets.isTaken("sub/late.bin"), "the index does not watch the disk")
        targets.diskDisagreed(about: target("sub/late.bin"))
        #expect(targets.isTaken("sub/late.bin"))
        #expect(targets.reserveFree(target("sub/late.bin")).relative == "sub/late.1.bin")
    }

    @Test func theIndexFollowsTheRegistrysOwnChanges() throws {
        let targets = TargetRegistry(output: output)
        let t = target("new/deep/x.bin")
        #expect(targets.ensureFolder(of: t) == nil)
        let file = try #require(try targets.openPart(t, keeping: 0, exclusive: true))
        file.closeFile()
        #expect(targets.isTaken("new/deep/x.bin"), "its part file is on disk")
        #expect(try targets.openPart(t, keeping: 0, exclusive: true) == nil, "O_EXCL: never truncates a file")
        #expect(targets.rename(targets.partName(t), to: "new/deep/x.bin") == nil)
        #expect(FileManager.default.fileExists(atPath: targets.finalPath(t)))
        #expect(!FileManager.default.fileExists(atPath: targets.partPath(t)))
        #expect(targets.rename("new/deep/missing", to: "new/deep/y.bin") == ENOENT)
        targets.removePart(t)  // none left: nothing happens
        #expect(targets.isTaken("new/deep/x.bin"))
    }

    /// A shared store (a database) can lose a race for a name the taken rule
    /// saw as free: the registry takes the next free one.
    @Test func aStoreThatLosesARaceGetsTheNextName() {
        final class Contended: NameReservations {
            var held: Set<String> = []
            var raced = false
            func isReserved(_ relative: String) -> Bool { held.contains(relative) }
            func reserve(_ relative: String) -> Bool {
                // Another worker takes the first name asked for, just before us.
                if !raced {
                    raced = true
                    held.insert(relative)
                    return false
                }
                return held.insert(relative).inserted
            }
            func release(_ relative: String) { held.remove(relative) }
        }
        let targets = TargetRegistry(output: output, reservations: Contended())
        #expect(targets.reserveFree(target("r.pdf")).relative == "r.1.pdf")
    }
}
