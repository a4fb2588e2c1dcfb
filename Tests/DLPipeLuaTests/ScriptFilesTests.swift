@testable import DLPipe
import Foundation
import Testing
import TestSupport

@testable import DLPipeLua

/// dl.write, dl.append and dl.remove's rules (ScriptFiles) on a real folder
/// and state: confinement, no-clobber, downloads' files, who may remove what.
@Suite struct ScriptFilesTests {
    let folder: String
    let outside: String
    let state: StateStore
    let files: ScriptFiles

    init() throws {
        let base = NSTemporaryDirectory() + "dlpipe-files-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: base + "/out", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: base + "/outside", withIntermediateDirectories: true)
        folder = try #require(TargetPath.canonical(base + "/out"))
        outside = try #require(TargetPath.canonical(base + "/outside"))
        state = try StateStore(path: folder + "/.dlpipe/state.db")
        files = ScriptFiles(root: folder, state: state, job: "feed", downloads: KnownDownloadFiles())
    }

    func read(_ path: String) -> String? {
        FileManager.default.contents(atPath: folder + "/" + path).map { String(decoding: $0, as: UTF8.self) }
    }

    func put(_ path: String, _ text: String) throws {
        try TestFiles.create(folder + "/" + path, Data(text.utf8))
    }

    /// The message of the error `body` throws, or nil (with an issue) when it does not throw.
    func refusal(_ body: () throws(ScriptError) -> Void) -> String? {
        do throws(ScriptError) {
            try body()
            Issue.record("expected a refusal")
            return nil
        } catch {
            return error.message
        }
    }

    @Test func writeCreatesReplacesAndRemembers() throws {
        try files.write("meta/a.json", Array("{}".utf8))
        #expect(read("meta/a.json") == "{}")
        #expect(try state.writer(of: "meta/a.json") == "feed")
        try files.write(folder + "/meta/a.json", Array("{\"b\":1}".utf8))  // absolute, inside
        #expect(read("meta/a.json") == "{\"b\":1}")
        // No temporary file is left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder + "/meta") == ["a.json"])
        // Another job's script may replace it too (the rule is "a script wrote it").
        try ScriptFiles(root: folder, state: state, job: "other", downloads: KnownDownloadFiles()).write("meta/a.json", Array("x".utf8))
        #expect(read("meta/a.json") == "x")
    }

    @Test func aFileThatWasThereIsNeverReplacedNorAppendedTo() throws {
        try put("mine.txt", "the user's")
        let write = refusal { () throws(ScriptError) in try files.write("mine.txt", Array("x".utf8)) }
        #expect(write?.contains("mine.txt is already there and no script wrote it") == true, "\(write ?? "")")
        let append = refusal { () throws(ScriptError) in try files.append("mine.txt", Array("x".utf8)) }
        #expect(append?.contains("no script wrote it") == true)
        let remove = refusal { () throws(ScriptError) in try files.remove("mine.txt") }
        #expect(remove?.contains("was not placed by dlpipe") == true, "\(remove ?? "")")
        #expect(read("mine.txt") == "the user's")
        #expect(try state.writer(of: "mine.txt") == nil)
    }

    @Test func aDownloadsFileIsNotWrittenButMayBeRemovedAndIsThenForgotten() throws {
        let request = DownloadRequest(url: "http://h/a.bin")
        try state.save(DownloadRecord(
            key: request.deduplicationKey, url: request.url, target: "a.bin", status: .finished, bytes: 3, total: 3,
            etag: "\"e\"", lastModified: nil, sha256: nil, mediaType: nil, attempts: 1, lastError: nil, updatedAt: 0,
            placed: PlacedFile(path: "a.bin", size: 3)))
        try state.flush()
        try put("a.bin", "abc")
        let write = refusal { () throws(ScriptError) in try files.write("a.bin", Array("x".utf8)) }
        #expect(write?.contains("a.bin is a download's file") == true, "\(write ?? "")")
        let append = refusal { () throws(ScriptError) in try files.append("a.bin", Array("x".utf8)) }
        #expect(append?.contains("a download's file") == true)
        #expect(read("a.bin") == "abc")
        try files.remove("a.bin")
        #expect(read("a.bin") == nil)
        #expect(try state.record(key: request.deduplicationKey) == nil)
        // Forgotten: the name is free for a script now.
        try files.write("a.bin", Array("mine".utf8))
        #expect(read("a.bin") == "mine")
    }

    @Test func aNewFileIsNotCreatedUnderADownloadsNameEvenWhenItsFileIsGone() throws {
        // A download whose file is missing (removed by hand, or still a part file):
        // a script's file under its name would later pass for the download's.
        let request = DownloadRequest(url: "http://h/gone.bin")
        try state.save(DownloadRecord(
            key: request.deduplicationKey, url: request.url, target: "sub/gone.bin", status: .partial, bytes: 0,
            total: nil, etag: nil, lastModified: nil, sha256: nil, mediaType: nil, attempts: 1, lastError: nil,
            updatedAt: 0))
        try state.flush()
        let write = refusal { () throws(ScriptError) in try files.write("sub/gone.bin", Array("x".utf8)) }
        #expect(write?.contains("sub/gone.bin is a download's file") == true, "\(write ?? "")")
        let append = refusal { () throws(ScriptError) in try files.append("sub/gone.bin", Array("x".utf8)) }
        #expect(append?.contains("a download's file") == true)
        #expect(read("sub/gone.bin") == nil)
        #expect(try state.writer(of: "sub/gone.bin") == nil)
    }

    @Test func appendAddsLinesToItsOwnFile() throws {
        try files.append("log/manifest.txt", Array("one".utf8))
        try files.append("log/manifest.txt", Array("two\n".utf8))
        try files.append("log/manifest.txt", [])
        #expect(read("log/manifest.txt") == "one\ntwo\n\n")
        #expect(try state.writer(of: "log/manifest.txt") == "feed")
    }

    @Test func removeTakesOnlyThisJobsFiles() throws {
        try ScriptFiles(root: folder, state: state, job: "other", downloads: KnownDownloadFiles()).write("theirs.txt", Array("x".utf8))
        let theirs = refusal { () throws(ScriptError) in try files.remove("theirs.txt") }
        #expect(theirs?.contains("written by the job \"other\"") == true, "\(theirs ?? "")")
        #expect(read("theirs.txt") == "x")
        try files.write("ours.txt", Array("y".utf8))
        try files.remove("ours.txt")
        #expect(read("ours.txt") == nil)
        #expect(try state.writer(of: "ours.txt") == nil)
        let gone = refusal { () throws(ScriptError) in try files.remove("ours.txt") }
        #expect(gone == "no such file: ours.txt")
    }

    @Test func pathsStayInsideTheOutputDirectoryAndOutOfTheState() throws {
        try FileManager.default.createSymbolicLink(atPath: folder + "/escape", withDestinationPath: outside)
        let cases: [(String, String)] = [
            ("../x.txt", "leaves the output directory"),
            ("/etc/x.txt", "is outside the output directory"),
            ("escape/x.txt", "outside the output directory (through a symlink)"),
            (".dlpipe/state.db", "inside .dlpipe/"),
            ("a/../.dlpipe/x", "inside .dlpipe/"),
            ("video.mp4.part", "part files"),
        ]
        for (path, expected) in cases {
            let write = refusal { () throws(ScriptError) in try files.write(path, Array("x".utf8)) }
            #expect(write?.contains(expected) == true, "\(path): \(write ?? "")")
            let remove = refusal { () throws(ScriptError) in try files.remove(path) }
            #expect(remove != nil, "\(path)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside).isEmpty)
        // A symlink that stays inside is followed, and the file is known by its real folder.
        try FileManager.default.createDirectory(atPath: folder + "/real", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: folder + "/alias", withDestinationPath: folder + "/real")
        try files.write("alias/x.txt", Array("x".utf8))
        #expect(read("real/x.txt") == "x")
        #expect(try state.writer(of: "real/x.txt") == "feed")
        // A symlink as the file itself is not the scripts' own: never written through.
        try FileManager.default.createSymbolicLink(atPath: folder + "/link.txt", withDestinationPath: outside + "/t.txt")
        let link = refusal { () throws(ScriptError) in try files.write("link.txt", Array("x".utf8)) }
        #expect(link?.contains("no script wrote it") == true)
        #expect(!FileManager.default.fileExists(atPath: outside + "/t.txt"))
    }
}
