import Foundation
import Testing

/// examples/api/job.lua: a paginated JSON API walked page by page by its
/// `Link` headers (the fault server sends FILE.headers with FILE), its items
/// downloaded, the cursor kept in dl.store so that a re-run starts where the
/// last one stopped. Served from a copy of examples/site that the test changes
/// between runs (a page missing, then back with a page after it).
@Suite struct APIExampleTests {
    let site = Paths.repository + "/examples/site"

    @Test func pagesAreWalkedAndARerunStartsAtTheCursor() async throws {
        let root = try TempDir.make("api-site")
        for entry in ["api", "img", "docs", "audio", "notes.txt"] {
            try FileManager.default.copyItem(atPath: site + "/" + entry, toPath: root + "/" + entry)
        }
        // The first run finds no page 3: the walk stops there. And page 2
        // answers a 429 with Retry-After: 1 once, as rate-limited APIs do.
        try FileManager.default.removeItem(atPath: root + "/api/page3.json")
        let links1 = try String(contentsOfFile: root + "/api/page1.json.headers", encoding: .utf8)
        #expect(links1.contains("<page2.json>; rel=\"next\""))
        try links1.replacingOccurrences(of: "<page2.json>", with: "<page2.json?status=429&fail_times=1&retry_after=1>")
            .write(toFile: root + "/api/page1.json.headers", atomically: true, encoding: .utf8)
        let server = try FaultServer(root: root)
        let out = try TempDir.make("api-out")
        let page = { (n: Int) in server.url("/files/api/page\(n).json") }
        func run() async throws -> DLPipeRun {
            try await DLPipeRun.run([
                "run", Paths.repository + "/examples/api/job.lua", "-d", out, "--json", "--no-hooks",
                "--var", "api=\(page(1))",
            ])
        }
        func served(_ path: String) throws -> Int { try server.requests(matching: "/files/" + path).count }

        let first = try await run()
        #expect(first.status == 1, "page 3 failed: \(first.stderr)")
        #expect(listing(out + "/items") == ["harbour.jpg", "manual.pdf", "notes.txt", "sunset.png"])
        for (name, source) in [("sunset.png", "img/sunset.png"), ("manual.pdf", "docs/manual.pdf")] {
            #expect(sameBytes(out + "/items/" + name, bytes(at: site + "/" + source)), "\(name)")
        }
        #expect(first.events("failed").compactMap { $0["url"] as? String } == [page(3)])
        #expect(first.logLines(containing: "saved The manual (104)").count == 1, "\(first.stderr)")
        #expect(first.logLines(containing: "the next run starts at \(page(3))").count == 1, "\(first.stderr)")
        // Pages are data: nothing of them is written.
        #expect(listing(out) == ["items"])
        // The 429's Retry-After was honoured. (That it holds back the whole
        // host, page 1's images too, is HostDelayTests' to show: here the
        // images' turns are 0.2 s apart, too close to be sure, on a loaded
        // machine, that the engine has read the 429 before they come.)
        let limited = try server.requests(matching: "/files/api/page2.json").compactMap { $0["time"] as? Double }
        #expect(limited.count == 2, "the 429, then the page: \(limited)")
        if limited.count == 2 { #expect(limited[1] - limited[0] >= 1 - 0.05, "\(limited)") }

        // Page 3 is back, and links a page 4 with one more item (its Link
        // holds several links, one with several rels and a quoted comma).
        try Data("""
            { "items": [ { "id": 105, "title": "Episode one", "url": "../audio/ep1.mp3" } ] }
            """.utf8).write(to: URL(fileURLWithPath: root + "/api/page3.json"))
        try Data("""
            Link: <page2.json>; rel="prev", <page4.json>; title="four, the last"; rel="NEXT last"
            """.utf8).write(to: URL(fileURLWithPath: root + "/api/page3.json.headers"))
        try Data("""
            { "items": [ { "id": 106, "title": "Episode two", "url": "../audio/ep2.mp3" } ] }
            """.utf8).write(to: URL(fileURLWithPath: root + "/api/page4.json"))
        let second = try await run()
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.logLines(containing: "starting at the cursor \(page(3))").count == 1, "\(second.stderr)")
        // Pages 1 and 2 and their items were not asked again.
        #expect(try served("api/page1.json") == 1 && served("api/page2.json") == 2)
        #expect(try served("img/") == 2 && served("notes.txt") == 1 && served("docs/") == 1)
        #expect(try served("api/page3.json") == 2 && served("api/page4.json") == 1)
        #expect(sameBytes(out + "/items/ep1.mp3", bytes(at: site + "/audio/ep1.mp3")))
        #expect(sameBytes(out + "/items/ep2.mp3", bytes(at: site + "/audio/ep2.mp3")))
        #expect(second.logLines(containing: "the next run starts at \(page(4))").count == 1, "\(second.stderr)")

        // Nothing new: only the last page is read again, and its item is kept.
        let third = try await run()
        #expect(third.status == 0, "\(third.stderr)")
        #expect(try served("api/page3.json") == 2 && served("api/page4.json") == 2)
        let kept = third.events("finished").filter { $0["unchanged"] as? Bool == true }
        #expect(kept.compactMap { $0["url"] as? String } == [server.url("/files/audio/ep2.mp3")], "\(third.stdout)")
        #expect(third.logLines(containing: "kept Episode two (106)").count == 1, "\(third.stderr)")
    }

    @Test func withoutTheAPIVariableTheJobSaysWhatToGive() async throws {
        let run = try await DLPipeRun.run(["check", Paths.repository + "/examples/api/job.lua", "--no-hooks"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("give the first page with --var api=URL"), "\(run.stderr)")
    }
}
