import Foundation
import Testing

/// `dlpipe check` catches the mistakes that would surface in a handler (issue
/// 40 item 3): a misspelled dl name anywhere, dl.skip in a finished handler, a
/// done handler returning a non-number, a response handler returning a
/// string. Each is exit 2 with file:line, and `run` refuses the same job at
/// load with the same message, before a single request.
@Suite struct CheckStaticTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "check-static")
        try server.put("a.txt", bytes: Array("alpha".utf8))
    }

    /// `check` and `run` of one job: both exit 2 and print the same lines.
    func refused(_ source: String) async throws -> [String] {
        let path = try job.write("job.lua", source)
        let check = try await DLPipeRun.run(["check", path, "--var", "base=\(server.url("/files"))"])
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(check.status == 2, "\(check.stdout)\(check.stderr)")
        #expect(run.status == 2, "\(run.stderr)")
        #expect(try server.requests(matching: "/files/a.txt").isEmpty, "refused before any request")
        let lines = { (text: String) in
            text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.contains("job.lua:") }
        }
        #expect(lines(check.stderr) == lines(run.stderr), "the same message: \(check.stderr) / \(run.stderr)")
        return lines(check.stderr)
    }

    @Test func aMisspelledNameInsideAHandler() async throws {
        let lines = try await refused("""
            dl.add(dl.var.base .. "/a.txt")
            dl.on("finished", function(d, f)
              dl.apend("index.txt", d.name)
            end)
            """)
        #expect(lines == ["\(job.directory)/job.lua:3: unknown name 'dl.apend' (did you mean 'dl.append'?)"])
    }

    @Test func skipInAFinishedHandler() async throws {
        let lines = try await refused("""
            dl.add(dl.var.base .. "/a.txt")
            dl.on("finished", function(d, f)
              if f.bytes < 10 then dl.skip("too small") end
            end)
            """)
        #expect(lines == ["\(job.directory)/job.lua:3: dl.skip may not be called in a finished handler (allowed: response)"])
    }

    @Test func aDoneHandlerReturningANonNumber() async throws {
        let lines = try await refused("""
            dl.add(dl.var.base .. "/a.txt")
            dl.on("done", function(s)
              if s.failed > 0 then return "failed" end
            end)
            """)
        #expect(lines == ["\(job.directory)/job.lua:3: a done handler returns nothing or an exit code (0, 1 or 5-125), not \"failed\""])
    }

    @Test func aResponseHandlerReturningAString() async throws {
        let lines = try await refused("""
            dl.add(dl.var.base .. "/a.txt")
            dl.on("response", function(d, r)
              if r.type ~= "text/plain" then return "not text" end
            end)
            """)
        #expect(lines == ["\(job.directory)/job.lua:3: a response handler returns nothing or dl.skip(reason), not \"not text\""])
    }

    /// The run-time check words a value the scan cannot see (a variable's) the same way.
    @Test func theRunTimeCheckSaysTheSame() async throws {
        _ = try job.write("job.lua", """
            dl.add(dl.var.base .. "/a.txt")
            dl.on("response", function(d, r)
              local verdict = "not text"
              return verdict
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 1)
        let message = run.events("failed").first?["message"] as? String ?? ""
        #expect(message.hasPrefix("\(job.directory)/job.lua:2: a response handler returns nothing or dl.skip(reason), not \"not text\""), "\(message)")
    }

    /// A name the scan cannot see (built at run time, or `dl` under another
    /// name) is an error when it is read, with the scan's message at the line
    /// that reads it; dl.var's members are the --var names, nil when not given.
    @Test func aNameTheScanCannotSeeIsAnErrorWhenRead() async throws {
        _ = try job.write("job.lua", """
            dl.add(dl.var.base .. "/a.txt")
            assert(dl.var.not_given == nil)
            dl.on("finished", function(d, f)
              local url = dl.url
              url.prase(d.url)
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 1, "\(run.stderr)")
        let message = run.events("failed").first?["message"] as? String ?? ""
        #expect(message.hasPrefix("\(job.directory)/job.lua:5: unknown name 'dl.url.prase' (did you mean 'dl.url.parse'?)"), "\(message)")
        _ = try job.write("top.lua", "local name = 'lgo'\ndl[name]('x')\n")
        let top = try await job.run("top.lua", out: out)
        #expect(top.status == 2 && top.stderr.contains("top.lua:2: unknown name 'dl.lgo' (did you mean 'dl.log'?)"), "\(top.stderr)")
    }

    /// A drop-in hook beside the job is scanned too, under its own name.
    @Test func aHookIsCheckedToo() async throws {
        try job.write("hooks.d/log.lua", """
            dl.on("finished", function(d, f) dl.lgo(d.name) end)
            """)
        let path = try job.write("job.lua", "dl.add(dl.var.base .. \"/a.txt\")\n")
        let check = try await DLPipeRun.run(["check", path, "--var", "base=\(server.url("/files"))"])
        #expect(check.status == 2)
        #expect(check.stderr.contains("log.lua:1: unknown name 'dl.lgo' (did you mean 'dl.log'?)"), "\(check.stderr)")
    }

    /// Every problem of every file, the hooks' too, one unindented line each,
    /// before any top level runs.
    @Test func everyProblemOfEveryFileOneLineEach() async throws {
        try job.write("hooks.d/log.lua", """
            dl.on("finished", function(d, f) dl.apend("log.txt", d.name) end)
            """)
        let path = try job.write("job.lua", """
            dl.log("top level ran")
            dl.on("response", function(d, r) return "x" end)
            dl.sikp("y")
            """)
        let check = try await DLPipeRun.run(["check", path])
        #expect(check.status == 2)
        let lines = check.stderr.split(separator: "\n").map(String.init)
        #expect(lines == [
            "\(job.directory)/job.lua:2: a response handler returns nothing or dl.skip(reason), not \"x\"",
            "\(job.directory)/job.lua:3: unknown name 'dl.sikp' (did you mean 'dl.skip'?)",
            "\(job.directory)/hooks.d/log.lua:1: unknown name 'dl.apend' (did you mean 'dl.append'?)",
        ], "\(check.stderr)")
    }

    /// Every example job and hook passes the scan (`check` goes on to its top
    /// level, which only asks for its --var).
    @Test func theExamplesPass() async throws {
        let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../examples").standardized.path
        let jobs = try FileManager.default.contentsOfDirectory(atPath: examples).filter { $0 != "hooks.d" }
        #expect(jobs.count >= 7, "\(jobs)")
        for name in jobs {
            let check = try await DLPipeRun.run(["check", "\(examples)/\(name)/job.lua", "--var", "base=http://127.0.0.1:1/"])
            #expect(!check.stderr.contains("unknown name") && !check.stderr.contains("may not be called in a")
                && !check.stderr.contains("handler returns"), "\(name): \(check.stderr)")
        }
        for hook in try FileManager.default.contentsOfDirectory(atPath: examples + "/hooks.d") {
            let check = try await DLPipeRun.run(["check", "\(examples)/hooks.d/\(hook)"])
            #expect(check.status == 0, "\(hook): \(check.stderr)")
        }
    }
}
