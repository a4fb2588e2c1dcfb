import Foundation
import Testing

/// `get -o -` removes its staging folder on every way out, and a closed
/// stdout is one line and exit 1, not a silent SIGPIPE (issue 36, item 2).
@Suite struct StdoutExitTests {
    let server: FaultServer
    let staging: String
    let out: String

    init() throws {
        server = try FaultServer()
        staging = try TempDir.make("stdout-staging")
        out = try TempDir.make("stdout-out")
    }

    /// A text body of numbered lines that stalls after `stall` bytes (once).
    private func stallingText(_ name: String, stall: Int = 100_000) throws -> String {
        let text = (0..<40_000).map { "line \($0)\n" }.joined()
        _ = try server.put(name, bytes: Array(text.utf8))
        return server.url("/files/\(name)?stall=\(stall)&stall_times=1")
    }

    private func start(_ url: String, full: Subprocess.FullPipe? = nil) throws -> Subprocess {
        try Subprocess(Paths.binary, ["get", url, "-o", "-", "-d", out], environment: ["TMPDIR": staging], full: full)
    }

    /// A reader that goes away (`| head -1`): exit 1 with one line that says
    /// so, within seconds, and nothing left in $TMPDIR.
    @Test func aClosedStdoutIsOneLineAndExitOne() async throws {
        let process = try start(try stallingText("closed.txt"))
        let (first, status, stderr) = await offThePool { () -> (String?, Int32?, String) in
            let first = process.readStdoutLine()
            process.closeStdout()
            let status = process.waitForExit(within: 20)
            return (first, status, process.finish().stderr)
        }
        #expect(first == "line 0")
        #expect(status == 1, "\(stderr)")
        let lines = stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(stderr)")
        #expect(stderr.contains("dlpipe: -o -: stdout was closed before the body ended"), "\(stderr)")
        #expect(listing(staging) == [], "the staging folder is removed")
    }

    /// SIGINT or SIGTERM: the clean stop removes the staged body (stdout
    /// cannot be resumed) and says so, instead of "part files are kept".
    @Test(arguments: [SIGINT, SIGTERM])
    func aSignalRemovesTheStagedBody(_ signal: Int32) async throws {
        let process = try start(try stallingText("signal-\(signal).txt"))
        let (first, staged, result) = await offThePool { () -> (String?, [String], (status: Int32, stdout: String, stderr: String)) in
            let first = process.readStdoutLine()
            let staged = listing(staging)
            process.signal(signal)
            return (first, staged, process.finish())
        }
        #expect(first == "line 0")
        #expect(staged.count == 1 && staged[0].hasPrefix("dlpipe-stdout-"), "the body was staged: \(staged)")
        #expect(result.status == 130, "\(result.stderr)")
        #expect(result.stderr.contains("cannot be resumed"), "\(result.stderr)")
        #expect(!result.stderr.contains("part files are kept"), "\(result.stderr)")
        #expect(listing(staging) == [], "the staging folder is removed")
    }

    /// A second signal quits at once, while the clean stop cannot even say
    /// "stopping" (stderr is a full pipe): it removes the staged body too.
    @Test func aSecondSignalRemovesTheStagedBodyToo() async throws {
        let process = try start(try stallingText("again.txt"), full: .stderr)
        let status = await offThePool { () -> Int32? in
            _ = process.readStdoutLine()
            process.signal(SIGINT)
            process.signal(SIGTERM)
            return process.waitForExit(within: 10)
        }
        #expect(status == 130, "nil: still running 10 s after the second signal")
        #expect(listing(staging) == [], "the staging folder is removed")
    }

    /// A usage error found after the staging folder was made (a hook that
    /// does not load) removes it too.
    @Test func aUsageErrorRemovesTheStagingFolder() async throws {
        let run = try await DLPipeRun.run(
            ["get", server.url("/files/none.txt"), "-o", "-", "--hook", out + "/missing.lua"], environment: ["TMPDIR": staging])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(listing(staging) == [], "the staging folder is removed")
    }
}
