import Foundation
import Testing

/// The command line itself: help, version, usage errors.
@Suite struct GetUsageTests {
    @Test func helpUsesTheOverviewUsageOptionsLayout() async throws {
        for args in [["--help"], ["get", "--help"]] {
            let run = try await DLPipeRun.run(args)
            #expect(run.status == 0)
            for heading in ["OVERVIEW:", "USAGE:", "OPTIONS:"] { #expect(run.stdout.contains(heading), "\(args)") }
        }
    }

    @Test func versionNamesTheTool() async throws {
        let run = try await DLPipeRun.run(["--version"])
        #expect(run.status == 0)
        #expect(run.stdout.hasPrefix("dlpipe "))
    }

    @Test(arguments: [
        ["get"],
        ["get", "--bogus", "http://127.0.0.1:1/x"],
        ["get", "-j", "0", "http://127.0.0.1:1/x"],
        ["get", "--rate", "fast", "http://127.0.0.1:1/x"],
        ["get", "--progress", "sideways", "http://127.0.0.1:1/x"],
        ["get", "-o", "x", "http://127.0.0.1:1/a", "http://127.0.0.1:1/b"],
        ["get", "-i", "/nonexistent/list"],
        ["get", "--cacert", "/nonexistent/ca.pem", "https://127.0.0.1:1/x"],
        ["frobnicate"],
    ])
    func usageErrorsExitTwoWithAHint(_ args: [String]) async throws {
        let run = try await DLPipeRun.run(args)
        #expect(run.status == 2, "\(args): \(run.stderr)")
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 2, "\(args): \(run.stderr)")
        #expect(lines.last?.contains("--help") == true)
    }

    /// The queue's options belong to `run`: `get` says so (a usage error,
    /// exit 2, nothing fetched) instead of `unknown option "--queue"`.
    @Test(arguments: [
        ["--queue", "postgresql://u:secret@127.0.0.1/q"], ["--queue=postgresql://127.0.0.1/q"], ["--name", "mirror"], ["--follow"],
    ])
    func aQueueOptionOfGetSaysItIsRuns(_ extra: [String]) async throws {
        let out = try TempDir.make("get-queue")
        let run = try await DLPipeRun.run(["get", "http://127.0.0.1:1/x", "-d", out] + extra)
        #expect(run.status == 2, "\(extra): \(run.stderr)")
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 2, "\(run.stderr)")
        let option = extra[0].split(separator: "=")[0]
        #expect(lines.first?.contains("\(option) is an option of `dlpipe run`: a shared queue's workers run a job file (dlpipe run job.lua --queue URL --name NAME") == true, "\(run.stderr)")
        #expect(!run.stderr.contains("unknown option") && !run.stderr.contains("secret"), "\(run.stderr)")
        #expect(lines.last?.contains("--help") == true)
        #expect(listing(out).isEmpty)
    }

    /// `--state` takes a file: a database URL would become a folder named
    /// `postgres:` and a quiet local state. It is a usage error that names
    /// `--queue`, and it never echoes the URL's password.
    @Test(arguments: ["get", "run", "check", "status"], ["postgres://u:secret@127.0.0.1/q", "postgresql://127.0.0.1/q", "sqlite:///tmp/x.db"])
    func aStateThatIsAURLIsAUsageErrorPointingToQueue(_ command: String, _ state: String) async throws {
        let job = try LuaJob()
        let path = try job.write("job.lua", "dl.add('http://127.0.0.1:1/x')\n")
        let out = try TempDir.make("state-url")
        let operand = ["get": "http://127.0.0.1:1/x", "run": path, "check": path, "status": out][command]!
        let args = command == "status" ? [command, operand, "--state", state] : [command, operand, "-d", out, "--state", state]
        let run = try await DLPipeRun.run(args)
        #expect(run.status == 2, "\(args): \(run.stderr)")
        #expect(run.stderr.contains("--queue"), "\(run.stderr)")
        #expect(!run.stderr.contains("secret"), "\(run.stderr)")
        #expect(listing(out).isEmpty && !FileManager.default.fileExists(atPath: out + "/.dlpipe"))
    }

    @Test func unsupportedSchemeFailsTheDownloadNotTheRun() async throws {
        let run = try await DLPipeRun.run(["get", "ftp://127.0.0.1/x", "--json", "-d", try TempDir.make("ftp")])
        #expect(run.status == 1)
        #expect(run.events("failed").first?["message"] as? String ?? "" != "")
        #expect(run.events("failed").first?["kind"] as? String == "url")
    }
}
