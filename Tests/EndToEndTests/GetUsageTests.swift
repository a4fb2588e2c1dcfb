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

    @Test func unsupportedSchemeFailsTheDownloadNotTheRun() async throws {
        let run = try await DLPipeRun.run(["get", "ftp://127.0.0.1/x", "--json", "-d", try TempDir.make("ftp")])
        #expect(run.status == 1)
        #expect(run.events("failed").first?["message"] as? String ?? "" != "")
    }
}
