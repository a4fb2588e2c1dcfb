import Foundation
import Testing

/// A handler's error and its Lua traceback in human output: real lines, the
/// traceback indented under the line it belongs to, never Swift escapes such as
/// `\u{a}`. JSON keeps the message as it is.
@Suite struct TracebackOutputTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "traceback")
        try server.put("a.txt", bytes: Array("alpha".utf8))
    }

    @Test func aHandlersTracebackPrintsAsIndentedLinesInRun() async throws {
        try job.write("job.lua", """
            dl.add(dl.var.base .. "/a.txt")
            local function deep() local t = nil; return t.x end
            dl.on("response", function(d, r) deep() end)
            """)
        let path = job.directory + "/job.lua"
        let base = "base=\(server.url("/files"))"
        let run = try await DLPipeRun.run(["run", path, "-d", out, "--progress", "lines", "--var", base])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(!run.stderr.contains("\\u{"), "\(run.stderr)")
        let lines = run.stderr.split(separator: "\n", omittingEmptySubsequences: false)
        let failed = try #require(lines.firstIndex { $0.hasPrefix("failed ") }, "\(run.stderr)")
        #expect(lines[failed].hasSuffix("attempt to index a nil value (local 't') [1, hook]"), "\(lines[failed])")
        #expect(lines[failed + 1] == "    stack traceback:", "\(run.stderr)")
        #expect(lines[failed + 2].hasPrefix("      \(path):2: in "), "\(run.stderr)")
        #expect(lines[failed + 3].hasPrefix("      \(path):3: in "), "\(run.stderr)")
        #expect(!run.stderr.contains("dlpipe/prelude.lua"), "dlpipe's own frames are left out: \(run.stderr)")

        let json = try await DLPipeRun.run(["run", path, "-d", out, "--json", "--var", base])
        let message = json.events("failed").first?["message"] as? String ?? ""
        #expect(message.contains("\nstack traceback:\n\t\(path):2: in "), "JSON as it was: \(message.debugDescription)")
    }

    /// A script's log line with a newline or an escape sequence in it (a
    /// server's title) stays one of the script's: the lines after the first
    /// are indented, escapes are made visible, and the tabs between dl.log's
    /// arguments stay tabs.
    @Test func aLogLineWithANewlineStaysTheScripts() async throws {
        let path = try job.write("job.lua", "dl.log('title', 'a\\nfinished /etc/passwd', '\\027[31mred')\ndl.warn('w\\nx')\n")
        let run = try await DLPipeRun.run(["run", path, "-d", out])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stderr.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let first = try #require(lines.firstIndex { $0.hasPrefix("[\(path):1] ") }, "\(run.stderr)")
        #expect(lines[first] == "[\(path):1] title\ta", "\(run.stderr)")
        #expect(lines[first + 1] == "    finished /etc/passwd\t\\u{1b}[31mred", "\(run.stderr)")
        #expect(!lines.contains { $0.hasPrefix("finished ") }, "\(run.stderr)")
        #expect(lines.contains("[\(path):2] warning: w") && lines.contains("    x"), "\(run.stderr)")
    }

    @Test func aLoadErrorsTracebackPrintsAsIndentedLinesInCheck() async throws {
        try job.write("job.lua", "local function f() error('broken \\027[31mred') end\nf()\n")
        let path = job.directory + "/job.lua"
        let run = try await DLPipeRun.run(["check", path, "--no-hooks"])
        #expect(run.status == 2)
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.first == "\(path):1: broken \\u{1b}[31mred", "no raw escape sequence: \(run.stderr)")
        #expect(lines.dropFirst().first == "    stack traceback:", "\(run.stderr)")
        #expect(lines.dropFirst().allSatisfy { $0.hasPrefix("    ") }, "\(run.stderr)")
        #expect(lines.contains("      \(path):2: in main chunk"), "\(run.stderr)")
    }
}
