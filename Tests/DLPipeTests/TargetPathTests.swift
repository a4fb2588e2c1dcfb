import Foundation
import Testing

@testable import DLPipe

@Suite struct TargetPathTests {
    let root: String

    init() throws {
        let path = NSTemporaryDirectory() + "dlpipe-target-\(UUID().uuidString.prefix(8))"
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
}

extension FileManager {
    /// The canonical path (symlinks resolved), as the engine computes its root.
    func destinationOfSymbolicLinkSafe(_ path: String) -> String {
        URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    }
}
