import DLPipe
import Foundation
import Testing

/// `get -o` as curl and wget users expect: a bare name under `-d`, a path
/// with a `/` where it says (the state and lock still those of `-d`), `-` for
/// stdout; never a file dlpipe did not place replaced; bad paths refused before
/// any request.
@Suite struct GetOutputTests {
    let server: FaultServer
    let out: String
    let elsewhere: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("o-dir")
        elsewhere = try TempDir.make("o-elsewhere")
    }

    private func get(_ path: String, _ extra: [String]) async throws -> DLPipeRun {
        try await DLPipeRun.run(["get", server.url(path), "-d", out, "--json"] + extra)
    }

    @Test func anAbsolutePathOutsideTheDirectoryGetsTheFileAndTheDirectoryKeepsTheState() async throws {
        let data = try server.put("a.bin", randomBytes: 400_000)
        let target = elsewhere + "/deep.bin"
        let first = try await get("/files/a.bin", ["-o", target])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(sameBytes(target, data))
        #expect(listing(elsewhere) == ["deep.bin"], "no part file, no state beside the file")
        #expect(listing(out) == [], "nothing but .dlpipe in -d")
        #expect(first.events("finished").first?["path"] as? String == target)
        let state = try StateStore(path: out + "/.dlpipe/state.db")
        #expect(try state.records(status: .finished).map(\.url) == [server.url("/files/a.bin")])
        #expect(FileManager.default.fileExists(atPath: out + "/.dlpipe/lock"))
        // A re-run with the same -d asks conditionally and keeps the file.
        let second = try await get("/files/a.bin", ["-o", target])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.events("finished").first?["unchanged"] as? Bool == true)
        // The same name under -d is another download, not this one.
        let bare = try await get("/files/a.bin", ["-o", "deep.bin"])
        #expect(bare.status == 0 && sameBytes(out + "/deep.bin", data), "\(bare.stderr)")
        #expect(bare.events("finished").first?["unchanged"] as? Bool == false)
    }

    @Test func aRelativePathWithASlashIsRelativeToTheWorkingDirectory() async throws {
        let data = try server.put("r.txt", bytes: Array("relative".utf8))
        // From the test's working directory up to / and down to `elsewhere`.
        let depth = FileManager.default.currentDirectoryPath.split(separator: "/").count
        let relative = String(repeating: "../", count: depth) + elsewhere.dropFirst() + "/r.txt"
        let run = try await get("/files/r.txt", ["-o", relative])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(elsewhere + "/r.txt", data))
        #expect(listing(out) == [])
    }

    @Test(arguments: [true, false])
    func aFileDlpipeDidNotPlaceIsNeverReplaced(_ asPath: Bool) async throws {
        try server.put("c.txt", bytes: Array("server".utf8))
        let target = (asPath ? elsewhere : out) + "/mine.txt"
        try "the user's".write(toFile: target, atomically: false, encoding: .utf8)
        let run = try await get("/files/c.txt", ["-o", asPath ? target : "mine.txt"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("exists and dlpipe did not place it"), "\(run.stderr)")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "the user's")
        #expect(try server.requests(matching: "/files/c.txt").isEmpty, "refused before any request")
    }

    /// A file dlpipe placed with -o and the user then edited is not replaced
    /// by the next run, and the refusal says what happened (it said "dlpipe
    /// did not place it").
    @Test func aPlacedFileTheUserEditedIsNotReplaced() async throws {
        try server.put("e.txt", bytes: Array("server".utf8))
        let first = try await get("/files/e.txt", ["-o", "e.txt"])
        #expect(first.status == 0, "\(first.stderr)")
        let again = try await get("/files/e.txt", ["-o", "e.txt"])
        #expect(again.status == 0, "an unchanged file dlpipe placed is its to refresh: \(again.stderr)")
        try "the user's edit".write(toFile: out + "/e.txt", atomically: false, encoding: .utf8)
        let run = try await get("/files/e.txt", ["-o", "e.txt"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("was changed since dlpipe placed it (its size differs)"), "\(run.stderr)")
        #expect(try String(contentsOfFile: out + "/e.txt", encoding: .utf8) == "the user's edit")
        let replaced = try await get("/files/e.txt", ["-o", "e.txt", "--overwrite"])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(try String(contentsOfFile: out + "/e.txt", encoding: .utf8) == "server")
    }

    @Test func badPathsAreUsageErrorsBeforeAnyRequest() async throws {
        try server.put("b.txt", bytes: Array("b".utf8))
        try FileManager.default.createDirectory(atPath: elsewhere + "/folder", withIntermediateDirectories: true)
        let cases: [(String, String)] = [
            (elsewhere + "/missing/b.txt", "does not exist"),
            (elsewhere + "/folder", "is a directory"),
            (elsewhere + "/folder/", "names a directory"),
            (elsewhere + "/..", "names a directory"),
            ("", "-o wants"),
        ]
        for (value, message) in cases {
            let run = try await get("/files/b.txt", ["-o", value])
            #expect(run.status == 2, "\(value): \(run.stderr)")
            #expect(run.stderr.contains(message), "\(value): \(run.stderr)")
        }
        #expect(try server.requests(matching: "/files/b.txt").isEmpty)
    }

    /// `-o -` with a small body (held in memory) and a large one (through a
    /// part file): the bytes on stdout, nothing in -d, the staging folder gone.
    @Test(arguments: [100, 3_000_000])
    func dashWritesTheBodyToStdout(_ size: Int) async throws {
        let data = try server.put("s.bin", randomBytes: size)
        let staging = try TempDir.make("o-staging")
        let process = try Subprocess(Paths.binary, ["get", server.url("/files/s.bin"), "-o", "-", "-d", out + "/d"],
                                     environment: ["TMPDIR": staging])
        let (status, stdout, stderr) = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: process.finishBytes()) }
        }
        #expect(status == 0, "\(String(decoding: stderr, as: UTF8.self))")
        #expect(stdout == data, "\(stdout.count) bytes on stdout")
        #expect(!FileManager.default.fileExists(atPath: out + "/d"), "nothing of -d is touched")
        #expect(listing(staging) == [], "the staging folder is removed")
        // The plain line names stdout, not the staging folder the user never sees.
        let message = String(decoding: stderr, as: UTF8.self)
        #expect(message.contains("finished - (stdout) ("), "\(message)")
        #expect(!message.contains("dlpipe-stdout-"), "\(message)")
    }

    @Test func dashWithJSONIsAUsageError() async throws {
        let run = try await get("/files/none", ["-o", "-"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("--json"), "\(run.stderr)")
    }

    /// A stream cannot take back what it wrote: a transfer that breaks after
    /// its body began fails instead of resuming.
    @Test func aBrokenStreamFailsInsteadOfResuming() async throws {
        let data = try server.put("t.bin", randomBytes: 1_000_000)
        let process = try Subprocess(Paths.binary, [
            "get", server.url("/files/t.bin?truncate=300000&truncate_times=1"), "-o", "-", "-d", out,
        ])
        let (status, stdout, stderr) = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: process.finishBytes()) }
        }
        let message = String(decoding: stderr, as: UTF8.self)
        #expect(status == 1, "\(message)")
        #expect(message.contains("a stream is not resumed"), "\(message)")
        // The first attempt's bytes at most, and nothing of another attempt.
        #expect(stdout.count <= 300_000 && stdout == Array(data.prefix(stdout.count)), "\(stdout.count) bytes")
    }
}
