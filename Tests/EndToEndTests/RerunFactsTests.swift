import DLPipe
import Foundation
import Testing

/// What a re-run reports about files it keeps (a 304, refresh "never"): the
/// media type and checksum the state remembers, so that a job's handlers see
/// the same facts as on the first run; and the state's own counts.
@Suite struct RerunFactsTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "rerun")
        try server.put("a.txt", bytes: Array("alpha".utf8))
        try server.put("b.bin", randomBytes: 50_000)
        try server.put("page.html", bytes: Array("<a href=\"a.txt\">a</a> <a href=\"b.bin\">b</a>".utf8))
    }

    /// The commonest job, run again from cron: the page is unchanged (304), and
    /// its links are followed again because `f.type` is still text/html, also
    /// when the 304 names no Content-Type (`bare_304`).
    @Test(arguments: [false, true])
    func aCrawlFollowsItsLinksOnAConditionalReRun(_ bare304: Bool) async throws {
        try job.write("crawl.lua", """
            dl.add(dl.var.page)
            dl.on("finished", function(d, f)
              if f.type == "text/html" then
                for href in dl.read(f.path):gmatch('href="([^"]+)"') do dl.add(dl.url.resolve(d.url, href)) end
              end
            end)
            """)
        let page = server.url("/files/page.html" + (bare304 ? "?bare_304=1" : ""))
        let first = try await job.run("crawl.lua", out: out, ["--var", "page=\(page)"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.events("finished").count == 3)
        let second = try await job.run("crawl.lua", out: out, ["--var", "page=\(page)"])
        #expect(second.status == 0, "\(second.stderr)")
        let finished = second.events("finished")
        #expect(finished.count == 3, "the links were followed again: \(second.stdout)")
        #expect(finished.allSatisfy { $0["unchanged"] as? Bool == true })
        let pageEvent = finished.first { ($0["path"] as? String ?? "").hasSuffix("/page.html") }
        #expect(pageEvent?["type"] as? String == "text/html")
        let textEvent = finished.first { ($0["path"] as? String ?? "").hasSuffix("/a.txt") }
        #expect(textEvent?["type"] as? String == "text/plain")
        #expect(try server.requests(matching: "/files/a.txt").count == 2, "asked again, conditionally")
    }

    @Test func refreshNeverReportsTheKeptType() async throws {
        try job.write("never.lua", """
            dl.config{ refresh = "never" }
            dl.add(dl.var.base .. "/page.html")
            dl.add(dl.var.base .. "/b.bin")
            """)
        let base = server.url("/files")
        let first = try await job.run("never.lua", out: out, ["--var", "base=\(base)"])
        #expect(first.status == 0, "\(first.stderr)")
        let second = try await job.run("never.lua", out: out, ["--var", "base=\(base)"])
        #expect(second.status == 0, "\(second.stderr)")
        let types = second.events("finished").map { $0["type"] as? String ?? "?" }.sorted()
        #expect(types == ["application/octet-stream", "text/html"], "\(second.stdout)")
        #expect(try server.requests(matching: "/files/").count == 2, "never asked again")
    }

    /// A digest a handler computed (`f.sha256`, no `sha256=` given) is kept in
    /// the state, and an unchanged file reports it on the next run.
    @Test func aComputedChecksumIsKeptAndReportedOnAReRun() async throws {
        try job.write("hash.lua", """
            dl.add(dl.var.url)
            dl.on("finished", function(d, f) dl.log("sha", f.sha256) end)
            """)
        let url = server.url("/files/b.bin")
        let expected = sha256Hex(bytes(at: server.root + "/b.bin"))
        let first = try await job.run("hash.lua", out: out, ["--var", "url=\(url)"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains(expected))
        let record = try StateStore(path: out + "/.dlpipe/state.db").records().first
        #expect(record?.sha256 == expected)
        let second = try await DLPipeRun.run(["get", url, "-d", out, "--json"])
        let finished = second.events("finished").first
        #expect(finished?["unchanged"] as? Bool == true)
        #expect(finished?["sha256"] as? String == expected, "\(second.stdout)")
    }

    /// `attempts` is the count of the run that last touched the download: one
    /// retry in the first run makes 2, a clean second run makes 1 (not 3).
    @Test func attemptsCountPerRun() async throws {
        let url = server.url("/files/a.txt?fail_times=1&status=503&retry_after=0")
        let first = try await DLPipeRun.run(["get", url, "-d", out, "-q"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try StateStore(path: out + "/.dlpipe/state.db").records().first?.attempts == 2)
        let second = try await DLPipeRun.run(["get", url, "-d", out, "--json"])
        #expect(second.events("finished").first?["unchanged"] as? Bool == true)
        #expect(try StateStore(path: out + "/.dlpipe/state.db").records().first?.attempts == 1)
    }
}
