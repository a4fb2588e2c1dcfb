import Foundation
import Testing

/// Environment variables are secrets until the user names them (issue 19): `os.getenv`
/// answers nil for every other name; `--allow-env NAME` allows a name for every script, the
/// job's `dl.config{ env = ... }` for the job alone (hooks do not inherit it). `--var` values
/// are readable by every script, on purpose.
@Suite struct EnvironmentSecretsTests {
    let job: LuaJob
    let out: String
    static let environment = ["DLPIPE_TEST_SECRET": "s3cret", "DLPIPE_TEST_SHARED": "shared", "DLPIPE_TEST_JOBONLY": "jobonly"]

    init() throws {
        job = try LuaJob()
        out = try TempDir.make("secrets")
    }

    /// What a script logs: the four variables, tab-separated.
    static let probe = """
        tostring(os.getenv("DLPIPE_TEST_SECRET")), tostring(os.getenv("DLPIPE_TEST_SHARED")),
          tostring(os.getenv("DLPIPE_TEST_JOBONLY")), tostring(os.getenv("HOME")), tostring(dl.var.v)
        """

    @Test func onlyAllowedNamesAreAnswered() async throws {
        try job.write("job.lua", """
            dl.config{ env = { "DLPIPE_TEST_JOBONLY" } }
            dl.log("job:", \(Self.probe))
            dl.on("done", function() dl.log("job handler:", \(Self.probe)) end)
            """)
        try job.write("hooks.d/spy.lua", """
            dl.log("hook:", \(Self.probe))
            dl.on("done", function() dl.log("hook handler:", \(Self.probe)) end)
            """)
        let run = try await DLPipeRun.run(
            ["run", job.directory + "/job.lua", "-d", out, "--allow-env", "DLPIPE_TEST_SHARED", "--var", "v=given"],
            environment: Self.environment)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("job:\tnil\tshared\tjobonly\tnil\tgiven"), "\(run.stderr)")
        #expect(run.stderr.contains("job handler:\tnil\tshared\tjobonly\tnil\tgiven"), "\(run.stderr)")
        #expect(run.stderr.contains("hook:\tnil\tshared\tnil\tnil\tgiven"), "\(run.stderr)")
        #expect(run.stderr.contains("hook handler:\tnil\tshared\tnil\tnil\tgiven"), "\(run.stderr)")
        #expect(!run.stderr.contains("s3cret"))
    }

    @Test func badNamesAreClearErrors() async throws {
        try job.write("job.lua", "dl.log('never')")
        let empty = try await DLPipeRun.run(["run", job.directory + "/job.lua", "-d", out, "--allow-env", "A=B"])
        #expect(empty.status == 2)
        #expect(empty.stderr.contains("--allow-env wants a variable name, not \"A=B\""), "\(empty.stderr)")
        for (config, message) in [
            ("env = 'DLPIPE_TEST_SECRET'", "config key 'env' wants a table, not a string"),
            ("env = { 1 }", "config key 'env' wants a list of variable names"),
        ] {
            try job.write("job.lua", "\n dl.config{ \(config) }")
            let run = try await DLPipeRun.run(["check", job.directory + "/job.lua"], environment: Self.environment)
            #expect(run.status == 2, "\(config): \(run.stderr)")
            #expect(run.stderr.contains("job.lua:2: \(message)"), "\(config): \(run.stderr)")
        }
    }
}
