import Foundation
import Testing
import TestSupport

/// Issue 35: a long list of URLs that all want one name (`s.bin?n=1` ...,
/// the everyday `download.php?id=N`). Numbering searched `.1` to `.10000`
/// on every call (quadratic), then gave up on a taken name, and the
/// no-clobber rename retried it for ever on the engine thread, deaf to
/// SIGTERM. Each download now gets a free name in about constant time, and a
/// stop is obeyed at once.
@Suite struct SameNameFloodTests {
    let nginx: Nginx
    let folder: String

    init() throws {
        nginx = try Nginx.shared()
        folder = Nginx.uniquePath()
        try nginx.put(folder + "/s.bin", bytes: Array("abc".utf8))
    }

    /// A list of `count` URLs of one file, each its own download (another query).
    private func list(_ count: Int) throws -> String {
        let path = try TempDir.make("same-name-list") + "/urls.txt"
        let lines = (1...count).map { nginx.url(folder + "/s.bin?n=\($0)", tls: false) }
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The output folder: on tmpfs when there is one, where the many small
    /// files' syncfs costs nothing (this test is about naming, not disks).
    private func outputFolder(_ label: String) throws -> String {
        let shm = "/dev/shm"
        guard access(shm, W_OK) == 0 else { return try TempDir.make(label) }
        let path = shm + "/dlpipe-test-\(label)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// 50,000 same-named URLs: every one a file of its own, `s.bin`,
    /// `s.1.bin` ... `s.49999.bin`, well inside the time limit (main stopped
    /// at 10,102 files and spun until killed).
    @Test func fiftyThousandURLsOfOneNameEachGetAFileOfTheirOwn() async throws {
        let urls = try list(50_000)
        let out = try outputFolder("same-name-50k")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let run = try await DLPipeRun.run(["get", "-i", urls, "-d", out, "-q"])
        #expect(run.status == 0, "\(run.stderr.suffix(2000))")
        #expect(run.seconds < 240, "50,000 downloads took \(run.seconds) s")
        let names = Set(listing(out)).subtracting([".dlpipe"])
        let expected = Set(["s.bin"] + (1..<50_000).map { "s.\($0).bin" })
        #expect(names.count == 50_000)
        #expect(names == expected, "unexpected: \(names.subtracting(expected).sorted().prefix(5))")
        #expect(sameBytes(out + "/s.49999.bin", Array("abc".utf8)))
    }

    /// A folder that holds the name and its first 12,000 numbers already
    /// (past the 10,000 where numbering gave up): downloads of that name go
    /// on from `s.12001.bin`, and SIGTERM among them stops the run at once,
    /// cleanly (exit 130).
    @Test func aCrowdedNameGoesOnNumberingAndAStopIsObeyedAtOnce() async throws {
        let out = try outputFolder("same-name-crowded")
        defer { try? FileManager.default.removeItem(atPath: out) }
        for index in 0...12_000 {
            let name = index == 0 ? "s.bin" : "s.\(index).bin"
            guard FileManager.default.createFile(atPath: out + "/" + name, contents: nil) else {
                throw TestFailure("cannot create \(name)")
            }
        }
        let urls = try list(20_000)
        let process = try Subprocess(Paths.binary, ["get", "-i", urls, "-d", out, "--json"], timeout: 120)
        let (reached, seconds, status) = await offThePool { () -> (Bool, Double, Int32) in
            // The first name past the crowd (main never reached one).
            let reached = process.waitForLine(containing: "s.12001.bin")
            let signalled = Date()
            process.signal(SIGTERM)
            let (status, _, _) = process.finish()  // reads on: a full pipe would hold the stop
            return (reached, Date().timeIntervalSince(signalled), status)
        }
        #expect(reached, "no download was named past the 12,000 numbers taken")
        #expect(status == 130)
        // A second in the product; a loaded test machine gets more.
        #expect(seconds < 10, "the stop took \(seconds) s")
        let made = Set(listing(out)).subtracting([".dlpipe"]).subtracting(["s.bin"] + (1...12_000).map { "s.\($0).bin" })
        #expect(!made.isEmpty)
        for name in made {
            let number = name.hasPrefix("s.") ? Int(name.dropFirst(2).prefix { $0.isNumber }) : nil
            #expect(number.map { $0 > 12_000 } == true && (name.hasSuffix(".bin") || name.hasSuffix(".bin.part")), "\(name)")
        }
    }
}
