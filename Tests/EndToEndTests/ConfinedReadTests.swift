import Foundation
import Synchronization
import Testing
import TestSupport

/// `dl.read` and `f.sha256` read the file they checked: a name that flips
/// between a file inside the output directory and a symlink to one outside
/// never gives the outside bytes (the check used to be of the resolved path
/// and the read of the name: a swap between the two read the outside file),
/// and a FIFO under the name does not hang the handler.
@Suite struct ConfinedReadTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "confined")
        try server.put("page.txt", bytes: Array("page".utf8))
    }

    @Test func aNameSwappedWithASymlinkToAnOutsideFileNeverGivesItsBytes() async throws {
        let outside = try TempDir.make("confined-outside") + "/secret.txt"
        try "OUTSIDE secret".write(toFile: outside, atomically: true, encoding: .utf8)
        try "INSIDE file".write(toFile: out + "/flip.txt", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: out + "/flip.alt", withDestinationPath: outside)
        // f.sha256 of the name, many times: f pointed at it, its kept digest cleared, reads
        // `sha256` again through the primitive (f's metatable is locked, so not through a copy).
        try job.write("job.lua", """
            dl.config{ budget = 60 }
            dl.add(dl.var.base .. "/page.txt")
            dl.on("finished", function(d, f)
              local flip = f.path:match("^(.*)/") .. "/flip.txt"  -- absolute, as f.path
              local read, hashed, refused, leaked = 0, 0, 0, 0
              for i = 1, 3000 do
                local ok, data = pcall(dl.read, flip)
                if not ok then refused = refused + 1
                elseif data == "INSIDE file" then read = read + 1
                else leaked = leaked + 1 end
                f.path, f.sha256 = flip, nil
                local digest = f.sha256
                if digest == dl.var.inside then hashed = hashed + 1
                elseif digest ~= nil then leaked = leaked + 1 end
              end
              dl.log("read", read, "hashed", hashed, "refused", refused, "leaked", leaked)
            end)
            """)
        let flipper = Flipper(out + "/flip.txt", out + "/flip.alt")
        let run = try await job.run("job.lua", out: out, [
            "--var", "base=\(server.url("/files"))",
            "--var", "inside=\(sha256Hex(Array("INSIDE file".utf8)))",
        ])
        let flips = flipper.stop()
        #expect(run.status == 0, "\(run.stderr)")
        let counts = run.logLines(containing: "leaked").first ?? ""
        #expect(counts.hasSuffix("leaked\t0"), "outside bytes came back: \(counts)")
        #expect(flips > 100, "the name was swapped while the handler read it (\(flips) swaps)")
        // Both states were seen: the race was run, not missed.
        #expect(!counts.contains("read\t0\t") && !counts.contains("refused\t0\t"), "\(counts)")
    }

    @Test func aFIFOUnderTheNameDoesNotHangTheHandler() async throws {
        #expect(mkfifo(out + "/pipe", 0o644) == 0)
        try job.write("job.lua", """
            dl.add(dl.var.base .. "/page.txt")
            dl.on("finished", function(d, f)
              local pipe = f.path:match("^(.*)/") .. "/pipe"
              local ok, err = pcall(dl.read, pipe)
              f.path = pipe
              local digest = f.sha256
              dl.log("read", ok, err, "digest", digest)
            end)
            """)
        let process = try Subprocess(
            Paths.binary, ["run", job.directory + "/job.lua", "-d", out, "--json", "--var", "base=\(server.url("/files"))"])
        let status = await offThePool { process.waitForExit(within: 10) }
        let stderr = process.finish().stderr
        #expect(status == 0, "nil: the handler hung on the FIFO: \(stderr)")
        #expect(stderr.contains("read\tfalse\t"), "\(stderr)")
        #expect(stderr.contains("not a regular file"), "\(stderr)")
        #expect(stderr.contains("digest\tnil"), "\(stderr)")
    }

    @Test func theStateFolderIsNeverRead() async throws {
        try job.write("job.lua", """
            dl.add(dl.var.base .. "/page.txt")
            dl.on("finished", function(d, f)
              local ok, err = pcall(dl.read, ".dlpipe/state.db")
              dl.log("state", ok, err)
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.logLines(containing: "state\tfalse").first?.contains("outside the output directory") == true, "\(run.stderr)")
    }

    /// dl.read checks the file's size against what is left of the script memory cap before
    /// reading (a 400 MB download read whole reached 850 MB of RSS before the cap said no);
    /// a page of a few MB, read and matched with gmatch as the examples do, keeps working.
    @Test func aFileLargerThanTheCapIsRefusedBeforeItIsReadAndAPageStillReads() async throws {
        try TestFiles.create(out + "/huge.bin")
        let huge = try FileHandle(forWritingTo: URL(fileURLWithPath: out + "/huge.bin"))
        try huge.truncate(atOffset: 400 << 20)
        try huge.close()
        var page = ""
        for i in 0..<60_000 { page += "<a href=\"/img/\(i).jpg\">picture \(i)</a> some text around it\n" }
        try page.write(toFile: out + "/page.html", atomically: true, encoding: .utf8)
        try job.write("job.lua", """
            dl.add(dl.var.base .. "/page.txt")
            dl.on("finished", function(d, f)
              local ok, err = pcall(dl.read, "huge.bin")
              dl.log("huge", ok, err)
              local html = dl.read("page.html")
              local links = 0
              for href in html:gmatch('href="([^"]+)"') do links = links + 1 end
              dl.log("page", #html, links)
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("huge\tfalse\t"), "\(run.stderr)")
        #expect(run.stderr.contains("huge.bin has 419430400 bytes, more than the script memory cap of 256 MiB leaves room for"), "\(run.stderr)")
        #expect(run.stderr.contains("page\t\(page.utf8.count)\t60000"), "\(run.stderr)")
        #expect(run.seconds < 30, "refused before reading 400 MB: \(run.seconds) s")
    }
}

/// Swaps two names (renameat2 with RENAME_EXCHANGE) on a thread of its own as
/// fast as it can, until stopped.
private final class Flipper: Sendable {
    private let running = Atomic<Bool>(true)
    private let count = Atomic<Int>(0)
    private let done = DispatchSemaphore(value: 0)

    init(_ first: String, _ second: String) {
        Thread.detachNewThread { [self] in
            while running.load(ordering: .relaxed) {
                if renameat2(AT_FDCWD, first, AT_FDCWD, second, 2 /* RENAME_EXCHANGE */) == 0 {
                    count.add(1, ordering: .relaxed)
                }
            }
            done.signal()
        }
    }

    /// Stops the swapping and returns how many swaps were made.
    func stop() -> Int {
        running.store(false, ordering: .relaxed)
        done.wait()
        return count.load(ordering: .relaxed)
    }
}

/// glibc's renameat2 (2.28+), which the Glibc module does not import.
@_silgen_name("renameat2")
private func renameat2(_ fromDir: Int32, _ from: UnsafePointer<CChar>, _ toDir: Int32, _ to: UnsafePointer<CChar>, _ flags: UInt32) -> Int32
