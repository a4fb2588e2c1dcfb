import Foundation
import Testing
import TestSupport

@testable import DLPipe

@Suite struct TargetPathTests {
    let root: String

    init() throws {
        let path = try TempDir.make("target")
        try FileManager.default.createDirectory(atPath: path + "/inside", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: path + "/out", withDestinationPath: "/tmp")
        try FileManager.default.createSymbolicLink(atPath: path + "/in", withDestinationPath: path + "/inside")
        root = FileManager.default.destinationOfSymbolicLinkSafe(path)
    }

    @Test func namesAndDirectoriesInsideAreAccepted() throws {
        #expect(try TargetPath.resolve(root: root, directory: nil, name: "a.txt") == TargetPath(directory: "", name: "a.txt"))
        #expect(try TargetPath.resolve(root: root, directory: "x/y", name: "a.txt").relative == "x/y/a.txt")
        #expect(try TargetPath.resolve(root: root, directory: "", name: "a.txt").relative == "a.txt", "\"\" is the top")
        #expect(try TargetPath.resolve(root: root, directory: "x", name: "../b.txt").relative == "b.txt")
        #expect(try TargetPath.resolve(root: root, directory: "in", name: "c.txt").relative == "in/c.txt")
    }

    @Test(arguments: [
        (nil, "../x"), ("..", "x"), (nil, "/etc/passwd"), ("/tmp", "x"), ("a/../..", "x"),
        (nil, "out/x"), ("out", "x"), (nil, ""), (nil, "."), ("a", ".."),
    ] as [(String?, String)])
    func escapesAreRefusedAsHookErrors(_ directory: String?, _ name: String) {
        #expect(throws: DownloadError.self) {
            try TargetPath.resolve(root: root, directory: directory, name: name)
        }
        do {
            _ = try TargetPath.resolve(root: root, directory: directory, name: name)
        } catch {
            #expect(error.kind == .hook)
        }
    }

    /// The shortcut for a bare name agrees with the full path: "./NAME" goes the
    /// long way and must resolve to the same target, or fail the same way.
    @Test func bareNamesResolveAsTheFullPathDoes() {
        let pieces = ["a", "b.txt", ".", "..", "", "/", "x y", "\u{0}", "é", ".hidden", "dir"]
        var checked = 0
        for first in pieces {
            for second in pieces {
                let name = first + second
                // With a "/", "./" + name means something else ("/a" is absolute,
                // ".//a" is not); those names never take the shortcut anyway.
                if name.contains("/") { continue }
                let short = Result { () throws(DownloadError) in try TargetPath.resolve(root: root, directory: nil, name: name) }
                let long = Result { () throws(DownloadError) in try TargetPath.resolve(root: root, directory: ".", name: name) }
                switch (short, long) {
                case (.success(let a), .success(let b)): #expect(a == b, "\(name.debugDescription)")
                case (.failure(let a), .failure(let b)): #expect(a.kind == b.kind, "\(name.debugDescription)")
                default: Issue.record("\(name.debugDescription): \(short) vs \(long)")
                }
                checked += 1
            }
        }
        #expect(checked > 90)
    }
}

extension FileManager {
    /// The canonical path (symlinks resolved), as the engine computes its root.
    func destinationOfSymbolicLinkSafe(_ path: String) -> String {
        URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    }


    @Test func theStateFolderIsNeverATarget() throws {
        let root = try #require(TargetPath.canonical(NSTemporaryDirectory()))
            + "/dlpipe-target-state-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: root + "/.dlpipe", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root + "/state", withDestinationPath: root + "/.dlpipe")
        for (directory, name) in [(".dlpipe", "x"), (nil, ".dlpipe/state.db"), ("a/..", ".dlpipe"), (nil, ".dlpipe"), ("./.dlpipe/sub", "y")] {
            #expect(throws: DownloadError.self, "\(String(describing: directory)) \(name)") {
                try TargetPath.resolve(root: root, directory: directory, name: name)
            }
        }
        #expect(throws: DownloadError.self) { try TargetPath.resolve(root: root, directory: "state", name: "x") }
        #expect(try TargetPath.resolve(root: root, directory: ".dlpipe2", name: "x").relative == ".dlpipe2/x")
        #expect(try TargetPath.resolve(root: root, directory: "a", name: ".dlpipe").relative == "a/.dlpipe")
    }
}
