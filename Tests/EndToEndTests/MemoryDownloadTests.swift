import Foundation
import Testing

/// `dl.add{ into = "memory" }`: data fetched into `f.body`, nothing on disk.
@Suite struct MemoryDownloadTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "out")
    }

    private func run(_ source: String, _ extra: [String] = []) async throws -> DLPipeRun {
        try await job.run(source: source, out: out, extra)
    }

    /// A memory download with `sha256` is checked like a file: a mismatch
    /// fails it with kind `checksum`, the right digest finishes it.
    @Test func aMemoryBodyIsCheckedAgainstItsSHA256() async throws {
        try server.put("d.json", bytes: Array("{\"a\": 1}".utf8))
        let right = "f9d86028c6e0d64e225186f96acb69338b2c59764df79162107f5c4bb34d1310"  // sha256sum of the body
        let wrong = String(repeating: "0", count: 64)
        let url = server.url("/files/d.json")
        let run = try await run("""
            dl.add{ url = "\(url)", into = "memory", sha256 = "\(wrong)" }
            dl.add{ url = "\(url)?again", into = "memory", sha256 = "\(right.uppercased())" }
            """, ["--retries", "0"])
        #expect(run.status == 1, "\(run.stderr)")
        let failed = run.events("failed")
        #expect(failed.count == 1 && failed.first?["kind"] as? String == "checksum", "\(run.stdout)")
        #expect((failed.first?["message"] as? String)?.contains("SHA-256 of the body of \(url) is \(right), expected \(wrong)") == true)
        #expect(run.events("finished").first?["sha256"] as? String == right)
        #expect(listing(out).isEmpty, "nothing on disk")
    }

    @Test func apiPagesAreDecodedFromMemoryAndOnlyTheirFilesAreWritten() async throws {
        let a = try server.put("a.bin", randomBytes: 3000, seed: 1)
        let b = try server.put("b.bin", randomBytes: 4000, seed: 2)
        _ = try server.put("page1.json", bytes: Array("""
            {"items": ["\(server.url("/files/a.bin"))"], "next": "\(server.url("/files/page2.json"))"}
            """.utf8))
        _ = try server.put("page2.json", bytes: Array("""
            {"items": ["\(server.url("/files/b.bin"))"], "next": null}
            """.utf8))
        let source = """
            dl.add{ url = "\(server.url("/files/page1.json"))", into = "memory" }
            dl.on("finished", function(d, f)
              if not f.body then return end
              assert(f.path == nil, "a memory download has no path")
              local page = dl.json.decode(f.body)
              dl.log("page", #f.body, f.bytes, f.sha256 == dl.sha256(f.body))
              for _, url in ipairs(page.items) do dl.add(url) end
              if page.next ~= dl.json.null then dl.add{ url = page.next, into = "memory" } end
            end)
            """
        let first = try await run(source)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(sameBytes(out + "/a.bin", a))
        #expect(sameBytes(out + "/b.bin", b))
        #expect(listing(out) == ["a.bin", "b.bin"], "no page, part file or numbered name on disk")
        #expect(first.logLines(containing: "page").count == 2)
        #expect(first.logLines(containing: "page").allSatisfy { $0.hasSuffix("\ttrue") }, "\(first.stderr)")
        let finished = first.events("finished")
        #expect(finished.count == 4)
        #expect(finished.filter { $0["path"] == nil }.count == 2, "the pages' events name no path")

        // A re-run fetches the pages again, unconditionally (no record of them),
        // while the files are asked for conditionally and kept.
        let second = try await run(source)
        #expect(second.status == 0, "\(second.stderr)")
        let pages = try server.requests(matching: "/files/page1.json")
        #expect(pages.count == 2)
        let headers = pages.last?["headers"] as? [String: String] ?? [:]
        #expect(headers["if-none-match"] == nil && headers["if-modified-since"] == nil)
        #expect(second.events("finished").filter { $0["unchanged"] as? Bool == true }.count == 2)
        #expect(listing(out) == ["a.bin", "b.bin"])
    }

    @Test func aBodyOverTheLimitFailsWithKindSizeAndWritesNothing() async throws {
        try server.put("big.json", randomBytes: 20_000)
        let run = try await run("""
            dl.add{ url = "\(server.url("/files/big.json"))", into = "memory", max_size = 10000 }
            dl.add{ url = "\(server.url("/files/big.json?chunked=1"))", into = "memory", max_size = 10000 }
            dl.on("finished", function(d, f) dl.log("unexpected body", #f.body) end)
            """)
        #expect(run.status == 1, "\(run.stderr)")
        let kinds = run.events("failed").map { $0["kind"] as? String }
        #expect(kinds == ["size", "size"], "\(run.stdout)")
        #expect(run.logLines(containing: "unexpected body").isEmpty)
        #expect(listing(out).isEmpty, "\(listing(out))")
    }

    @Test func theDefaultLimitIsEightMiB() async throws {
        try server.put("over.bin", randomBytes: 8 * 1024 * 1024 + 1)
        try server.put("at.bin", randomBytes: 8 * 1024 * 1024, seed: 3)
        let run = try await run("""
            dl.add{ url = "\(server.url("/files/over.bin?chunked=1"))", into = "memory" }
            dl.add{ url = "\(server.url("/files/at.bin?chunked=1"))", into = "memory" }
            dl.on("finished", function(d, f) dl.log("got", #f.body) end)
            """)
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.events("failed").map { $0["kind"] as? String } == ["size"])
        #expect(run.logLines(containing: "got\t\(8 * 1024 * 1024)").count == 1, "\(run.stderr)")
        #expect(listing(out).isEmpty)
    }

    @Test func aMemoryAddNeverMeetsAFileAddOfTheSameURL() async throws {
        let data = try server.put("x.json", bytes: Array("{\"a\":1}".utf8))
        let run = try await run("""
            local m = dl.add{ url = "\(server.url("/files/x.json"))", into = "memory" }
            local f = dl.add("\(server.url("/files/x.json"))")
            assert(m ~= f, "two downloads")
            assert(dl.add{ url = "\(server.url("/files/x.json"))", into = "memory" } == m)
            """)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/x.json", data))
        #expect(run.events("finished").count == 2)
    }

    @Test func badIntoValuesAreLoadErrors() async throws {
        for (spec, words) in [
            ("into = \"disk\"", "dl.add: into wants \"file\" or \"memory\", not disk"),
            ("into = \"memory\", name = \"x\"", "dl.add: a download into = \"memory\" has no file, so no name or dir"),
        ] {
            let run = try await run("""
                dl.add{ url = "\(server.url("/files/x"))", \(spec) }
                """)
            #expect(run.status == 2, "\(spec): \(run.stderr)")
            #expect(run.stderr.contains("job.lua:1: \(words)"), "\(run.stderr)")
        }
    }
}
