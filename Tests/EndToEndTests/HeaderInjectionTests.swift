import DLPipe
import Foundation
import Testing

/// A header name or value with CR, LF, NUL or another control character would
/// reach the server as a header of its own (libcurl sends the text as it is).
/// Refused everywhere a header comes from: `-H` (exit 2), the job's top-level
/// `dl.add` (a load error), a handler's `dl.add` (that handler fails, kind
/// `hook`) and the library (the download fails, kind `hook`). The server never
/// sees an injected header.
@Suite struct HeaderInjectionTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "headers")
        try server.put("a.txt", bytes: Array("alpha".utf8))
        try server.put("b.txt", bytes: Array("beta".utf8))
    }

    /// No request the server saw has a header it was not meant to.
    private func noInjectedHeader() throws -> Bool {
        try server.requests(matching: "/").allSatisfy { request in
            let headers = request["headers"] as? [String: String] ?? [:]
            return headers["x-injected"] == nil && !(headers["x-test"] ?? "").contains("Injected")
        }
    }

    /// The headers are spelled with <CR>, <LF>, <ESC>, <SOH>, <DEL>, so that
    /// the test's name prints on one line. (A NUL cannot be in an argument:
    /// the unit tests and the Lua tests have it.)
    @Test(arguments: [
        "X-Test: a<CR><LF>X-Injected: 1", "X-Test: a<LF>X-Injected: 1", "X-Test: a<CR>X-Injected: 1",
        "X-Test: a<ESC>[31m", "X-Test: a<SOH>b", "X-Test: a<DEL>b", "X Test: a", "X-Test<CR><LF>X-Injected: 1",
    ])
    func aControlCharacterInDashHIsAUsageError(_ spelled: String) async throws {
        let controls = ["<CR>": "\r", "<LF>": "\n", "<ESC>": "\u{1B}", "<SOH>": "\u{1}", "<DEL>": "\u{7F}"]
        let header = controls.reduce(spelled) { $0.replacingOccurrences(of: $1.key, with: $1.value) }
        let run = try await DLPipeRun.run(["get", server.url("/files/a.txt"), "-d", out, "-H", header])
        #expect(run.status == 2, "\(header.debugDescription): \(run.stderr)")
        #expect(run.stderr.hasPrefix("dlpipe: -H"), "\(run.stderr)")
        #expect(try server.requests(matching: "/").isEmpty, "refused before any request")
    }

    @Test func aTabInAValueIsAllowed() async throws {
        let run = try await DLPipeRun.run(["get", server.url("/files/a.txt"), "-d", out, "-H", "X-Tab: a\tb"])
        #expect(run.status == 0, "\(run.stderr)")
        let headers = try server.requests(matching: "/files/a.txt").first?["headers"] as? [String: String]
        #expect(headers?["x-tab"] == "a\tb")
    }

    /// Lua table fields, as written in the job, and the start of the message.
    @Test(arguments: [
        (#"["X-Test"] = "a\r\nX-Injected: 1""#, "header X-Test has CR"),
        (#"["X-Injected: 1\r\nX-Test"] = "a""#, "header name \"X-Injected: 1\\r\\nX-Test\" has a colon"),
        (#"["X-Test"] = "a\0b""#, "header X-Test has NUL"),
    ])
    func theJobsOwnAddIsALoadErrorWithFileAndLine(_ field: String, _ message: String) async throws {
        let path = try job.write("job.lua", """
            dl.add(dl.var.base .. "/b.txt")
            dl.add{ url = dl.var.base .. "/a.txt", headers = { \(field) } }
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.hasPrefix("\(path):2: dl.add: \(message)"), "\(run.stderr)")
        #expect(try server.requests(matching: "/").isEmpty, "a load error: no request at all")
    }

    @Test func aHandlersAddFailsThatHandlersDownloadWithKindHook() async throws {
        try job.write("job.lua", """
            dl.add(dl.var.base .. "/a.txt")
            dl.add(dl.var.base .. "/b.txt")
            dl.on("response", function(d, r)
              if d.url:match("a.txt") then
                dl.add{ url = dl.var.base .. "/b.txt?x", headers = { ["X-Injected\\r\\nX"] = "1" } }
                dl.add{ url = dl.var.base .. "/b.txt?y", headers = { ["X-Test"] = "a\\nX-Injected: 1" } }
              end
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 1, "\(run.stderr)")
        let failed = run.events("failed")
        #expect(failed.count == 1 && failed.first?["kind"] as? String == "hook", "\(run.stdout)")
        let message = failed.first?["message"] as? String ?? ""
        #expect(message.contains("job.lua:5: dl.add: header name"), "\(message)")
        #expect(run.events("finished").count == 1, "the run goes on: b.txt")
        #expect(try server.requests(matching: "/files/b.txt").count == 1, "the refused add made no request")
        #expect(try noInjectedHeader())
    }

    @Test func theLibraryRefusesTooWithKindHook() async throws {
        var configuration = EngineConfiguration()
        configuration.directory = out
        let engine = try DownloadEngine(configuration: configuration)
        let events = engine.events()
        let id = engine.add(DownloadRequest(url: server.url("/files/a.txt"), headers: ["X-Test": "a\r\nX-Injected: 1"]))
        var failure: DownloadError?
        for await event in events where event.download?.id == id {
            if case .failed(_, let error) = event { failure = error }
            if event.isTerminal { break }
        }
        engine.shutdown()
        #expect(failure?.kind == .hook)
        #expect(failure?.message.contains("header X-Test has CR") == true, "\(String(describing: failure))")
        #expect(try server.requests(matching: "/").isEmpty)
    }
}
