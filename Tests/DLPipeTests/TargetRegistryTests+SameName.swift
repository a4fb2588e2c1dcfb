import Foundation
import Testing
import TestSupport

@testable import DLPipe

/// Many downloads that want one name (`download.php?id=N`, a long list of
/// `s.bin?n=N`): each gets a name of its own, the n-th costs about as much as
/// the first, and the numbers never run out.
@Suite struct TargetRegistrySameNameTests {
    let root: String
    let output: OutputDirectory

    init() throws {
        let path = NSTemporaryDirectory() + "dlpipe-same-name-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path + "/sub", withIntermediateDirectories: true)
        root = path
        output = OutputDirectory(root: path)
    }

    /// 50,000 holds of one wanted name, in one folder and in a subfolder: all
    /// distinct, numbered in order past 10,000 (where numbering once gave up
    /// and handed out a taken name). Each search starts at the number after
    /// the last one taken: the probes stay linear (counted, so the bound holds
    /// on any machine), and the time is far under the quadratic search's
    /// (1.25 billion probes).
    @Test func fiftyThousandDownloadsOfOneNameEachGetAFreeNameInLinearTime() throws {
        let targets = TargetRegistry(output: output)
        let started = Date()
        for wanted in ["s.bin", "sub/s.bin"] {
            var names: Set<String> = []
            for _ in 0..<50_000 {
                let parts = wanted.split(separator: "/").map(String.init)
                let held = targets.reserveFree(TargetPath(directory: parts.dropLast().joined(separator: "/"), name: parts.last!))
                names.insert(held.relative)
            }
            #expect(names.count == 50_000)
            let prefix = wanted.hasPrefix("sub/") ? "sub/" : ""
            #expect(names.contains(prefix + "s.bin") && names.contains(prefix + "s.49999.bin"))
            #expect(!names.contains(prefix + "s.50000.bin"))
        }
        let seconds = Date().timeIntervalSince(started)
        #expect(seconds < 120, "100,000 names took \(seconds) s")
    }

    /// The probes themselves, counted: n names cost at most about 2n of them.
    @Test func namingNDownloadsAlikeCostsLinearProbes() {
        var taken: Set<String> = []
        var probes = 0
        var next = 1
        for _ in 0..<20_000 {
            let found = CollisionName.firstFreeNumbered(for: "s.bin", from: next) { probes += 1; return taken.contains($0) }
            taken.insert(found.name)
            if found.index > 0 { next = found.index + 1 }
        }
        #expect(taken.count == 20_000)
        #expect(probes <= 2 * 20_000, "\(probes) probes")
    }

    /// Files already on disk under the name and 12,000 of its numbers (past the
    /// 10,000 where numbering once gave up): the next download still gets a
    /// free name, the first one after them.
    @Test func aFolderFullOfNumberedCopiesStillHasAFreeName() throws {
        for index in 0...12_000 {
            let name = index == 0 ? "s.bin" : "s.\(index).bin"
            try TestFiles.create(root + "/" + name)
        }
        let targets = TargetRegistry(output: output)
        #expect(targets.reserveFree(TargetPath(directory: "", name: "s.bin")).relative == "s.12001.bin")
        #expect(targets.reserveFree(TargetPath(directory: "", name: "s.bin")).relative == "s.12002.bin")
    }

    /// A finished download a hook renames to a taken name keeps the numbered
    /// variant of that name it has, whatever number later searches start at.
    @Test func aRenameToATakenNameKeepsTheNumberedVariantItHas() {
        let targets = TargetRegistry(output: output)
        let wanted = TargetPath(directory: "", name: "x.png")
        let first = targets.reserveFree(wanted)   // x.png
        let second = targets.reserveFree(wanted)  // x.1.png
        let third = targets.reserveFree(wanted)   // x.2.png
        #expect([first, second, third].map(\.relative) == ["x.png", "x.1.png", "x.2.png"])
        #expect(targets.reserveMove(from: second, to: wanted) == second)
        #expect(targets.reserveMove(from: third, to: wanted) == third)
        // The name itself free again: the move takes it.
        targets.release(first)
        #expect(targets.reserveMove(from: third, to: wanted) == wanted)
    }
}
