import Foundation
import Testing

/// `dl.warn` (issue 14): lines that `-q` still shows, so that a cron mail
/// carries them, while `-q` hides dl.log and print; `--json` makes them events.
@Suite struct ScriptWarnTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "warn")
        try server.put("a.txt", bytes: Array("alpha".utf8))
        try job.write("job.lua", """
            dl.add(dl.var.base .. "/a.txt")
            dl.warn("at load")
            dl.on("finished", function(d, f)
              print("printed", d.name)
              dl.log("logged", d.name)
              dl.warn("feed changed", d.name)
            end)
            """)
    }

    var base: [String] { ["--var", "base=\(server.url("/files"))", "--progress", "none"] }

    @Test func quietHidesLogAndPrintButNotWarn() async throws {
        let run = try await DLPipeRun.run(["run", job.directory + "/job.lua", "-d", out, "-q"] + base)
        #expect(run.status == 0, "\(run.stderr)")
        let path = job.directory + "/job.lua"
        #expect(run.stderr == "[\(path):2] warning: at load\n[\(path):6 #1] warning: feed changed\ta.txt\n", "\(run.stderr)")
    }

    @Test func withoutQuietEveryLineShows() async throws {
        let run = try await DLPipeRun.run(["run", job.directory + "/job.lua", "-d", out] + base)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.logLines(containing: "printed\ta.txt").count == 1, "\(run.stderr)")
        #expect(run.logLines(containing: "logged\ta.txt").count == 1)
        #expect(run.logLines(containing: "] warning: feed changed\ta.txt").count == 1)
    }

    @Test func jsonCarriesWarningsAsEvents() async throws {
        let run = try await job.run("job.lua", out: out, base + ["-q"])
        #expect(run.status == 0, "\(run.stderr)")
        let warnings = run.events("warning")
        #expect(warnings.count == 2, "\(run.stdout)")
        #expect(warnings.first?["message"] as? String == "at load")
        #expect(warnings.first?["id"] == nil)
        #expect(warnings.last?["message"] as? String == "feed changed\ta.txt")
        #expect(warnings.last?["id"] as? Int == 1)
        #expect(warnings.last?["script"] as? String == job.directory + "/job.lua:6")
        #expect(!run.stderr.contains("warning"), "not on stderr as well: \(run.stderr)")
        // The load-time warning comes before the engine's first event.
        #expect(run.events.first?["event"] as? String == "warning")
    }
}
