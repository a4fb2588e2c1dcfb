@testable import DLPipe
import Foundation
import Testing

@testable import DLPipeLua

/// dl.write's edges: the longest names the file system takes, paths too long to
/// name, and paths that name a folder.
@Suite struct ScriptFilesLimitTests {
    let folder: String
    let state: StateStore
    let files: ScriptFiles

    init() throws {
        let base = NSTemporaryDirectory() + "dlpipe-limits-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: base + "/out", withIntermediateDirectories: true)
        folder = try #require(TargetPath.canonical(base + "/out"))
        state = try StateStore(path: folder + "/.dlpipe/state.db")
        files = ScriptFiles(root: folder, state: state, job: "feed", downloads: KnownDownloadFiles())
    }

    /// The output directory's entries, the state's folder left out.
    func listing() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0 != ".dlpipe" }.sorted()
    }

    func refusal(_ body: () throws(ScriptError) -> Void) -> String {
        do throws(ScriptError) {
            try body()
            return "no refusal"
        } catch {
            return error.message
        }
    }

    /// ext4 takes 255 bytes; the temporary name beside a 250-byte name was longer.
    @Test func namesUpToTheFileSystemsLimitAreWritten() throws {
        for length in [200, 201, 250, 255] {
            let name = String(repeating: "n", count: length - 4) + ".txt"
            try files.write(name, Array("x".utf8))
            try files.write(name, Array("y".utf8))  // replaced, through a temporary file
            #expect(FileManager.default.contents(atPath: folder + "/" + name) == Data("y".utf8), "\(length)")
        }
        let left = try listing()
        #expect(left.count == 4, "no temporary file is left: \(left)")
        let message = refusal { () throws(ScriptError) in try files.write(String(repeating: "n", count: 256), []) }
        #expect(message.contains("a name has at most 255"), "\(message)")
    }

    /// 3,000 levels are past PATH_MAX: refused before a folder is made, and not blamed on a symlink.
    @Test func aPathTooLongIsRefusedBeforeAnyFolderIsMade() throws {
        let deep = Array(repeating: "d", count: 3000).joined(separator: "/") + "/f.txt"
        let message = refusal { () throws(ScriptError) in try files.write(deep, Array("x".utf8)) }
        #expect(message.contains("is too long"), "\(message.suffix(200))")
        #expect(!message.contains("symlink"))
        let left = try listing()
        #expect(left.isEmpty, "folders were left: \(left.prefix(3))")
    }

    /// "dirx/" named the file "dirx".
    @Test func aPathThatNamesAFolderIsRefused() throws {
        for path in ["dirx/", "dirx/.", "a/dirx/..", "/"] {
            let message = refusal { () throws(ScriptError) in try files.write(path, Array("x".utf8)) }
            #expect(message.contains("names a folder, not a file") || message.contains("outside"), "\(path): \(message)")
            let left = try listing()
            #expect(left.isEmpty, "\(path): \(left)")
        }
        #expect(refusal { () throws(ScriptError) in try files.append("dirx/", Array("x".utf8)) }.contains("names a folder"))
    }
}
