import Foundation
import Testing

/// The jobs in examples/, each run against the loopback server over examples/site.
@Suite struct LuaExampleTests {
    let server: FaultServer
    let out: String
    let site = Paths.repository + "/examples/site"

    init() throws {
        server = try FaultServer(root: Paths.repository + "/examples/site")
        out = try TempDir.make("example")
    }

    private func run(_ example: String, _ extra: [String]) async throws -> DLPipeRun {
        try await DLPipeRun.run(["run", Paths.repository + "/examples/" + example, "-d", out, "--json", "--no-hooks"] + extra)
    }

    @Test func galleryKeepsImagesOnlyNamedByHash() async throws {
        let run = try await run("gallery/job.lua", ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "\(run.stderr)")
        let images = listing(out + "/images")
        let sunset = sha256Hex(bytes(at: site + "/img/sunset.png"))
        let harbour = sha256Hex(bytes(at: site + "/img/harbour.jpg"))
        // sunset.png is linked twice under two URLs: the duplicate collapses into one file.
        #expect(images == [String(sunset.prefix(16)) + ".png", String(harbour.prefix(16)) + ".jpg"].sorted())
        #expect(sameBytes(out + "/images/" + String(harbour.prefix(16)) + ".jpg", bytes(at: site + "/img/harbour.jpg")))
        let skipped = run.events("skipped").compactMap { $0["reason"] as? String }
        #expect(skipped == ["not an image: application/pdf"])
        #expect(!listing(out).contains("manual.pdf"), "a skipped download writes nothing")
        #expect(run.logLines(containing: "duplicate of").count == 1)
        // A re-run keeps the names and makes no copy.
        let again = try await self.run("gallery/job.lua", ["--var", "base=\(server.url("/files"))"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(listing(out + "/images") == images)
    }

    @Test func mirrorFollowsLinksOnOneHostToTheDepthLimit() async throws {
        let run = try await run("mirror/job.lua", ["--var", "base=\(server.url("/files"))", "--var", "depth=2"])
        #expect(run.status == 0, "\(run.stderr)")
        for path in ["index.html", "gallery.html", "notes.txt", "docs/index.html", "docs/manual.pdf", "img/sunset.png", "deep/level2.html"] {
            #expect(sameBytes(out + "/" + path, bytes(at: site + "/" + path)), "\(path)")
        }
        #expect(!FileManager.default.fileExists(atPath: out + "/deep/level3.html"), "beyond the depth limit")
        #expect(run.events("failed").isEmpty, "the other host is never asked")
        #expect(try server.requests(matching: "/files/index.html").count == 1, "linked twice, fetched once")
    }

    @Test func feedFetcherSavesEveryEnclosure() async throws {
        let run = try await run("feed/job.lua", ["--var", "feed=\(server.url("/files/feed.xml"))"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(listing(out + "/episodes") == ["ep1.mp3", "ep2.mp3", "ep3.mp3"])
        #expect(sameBytes(out + "/episodes/ep2.mp3", bytes(at: site + "/audio/ep2.mp3")))
        #expect(run.logLines(containing: "saved Episode").count == 3)
        let parents = run.events("queued").compactMap { $0["parent"] as? Int }
        #expect(parents == [1, 1, 1], "enclosures are chained from the feed download")
    }

    @Test func retryPolicyFallsBackToTheMirror() async throws {
        let primary = try FaultServer()  // an empty root: every path is a 404
        let run = try await run("retry/job.lua", ["--var", "primary=\(primary.url("/files"))", "--var", "mirror=\(server.url("/files"))"])
        #expect(run.status == 0, "the primary's failures are handled by the fallback: \(run.stderr)")
        #expect(run.events("failed").isEmpty)
        #expect(run.events("handled").count == 3)
        #expect(run.events("done").first?["handled"] as? Int == 3)
        #expect(sameBytes(out + "/notes.txt", bytes(at: site + "/notes.txt")))
        #expect(sameBytes(out + "/harbour.jpg", bytes(at: site + "/img/harbour.jpg")))
        #expect(sameBytes(out + "/manual.pdf", bytes(at: site + "/docs/manual.pdf")))
        #expect(run.logLines(containing: "falling back to the mirror").count == 3)
        #expect(try primary.requests(matching: "/files/").count == 3, "a 404 is not retried on the primary")
    }

    @Test func dropInHooksSortAndLogInFileNameOrder() async throws {
        let run = try await DLPipeRun.run([
            "run", Paths.repository + "/examples/feed/job.lua", "-d", out, "--json",
            "--hooks", Paths.repository + "/examples/hooks.d", "--var", "feed=\(server.url("/files/feed.xml"))",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(listing(out + "/episodes").count == 3, "the job chose a folder: the sorting hook keeps it")
        #expect(listing(out + "/other") == ["feed.xml"], "feed.xml (application/xml) is sorted by the drop-in")
        let json = run.logLines(containing: "\"bytes\":")
        #expect(json.count == 4)
        #expect(json.allSatisfy { $0.contains("20-log-json.lua") })
        // 30-manifest.lua keeps a line per finished download, with the folder the sorting hook chose.
        let manifest = String(decoding: bytes(at: out + "/manifest.tsv"), as: UTF8.self).split(separator: "\n")
        #expect(manifest.count == 4, "\(manifest)")
        let ep2 = sha256Hex(bytes(at: site + "/audio/ep2.mp3"))
        #expect(manifest.contains { $0.hasSuffix("\t\(ep2)\tepisodes/ep2.mp3\t\(server.url("/files/audio/ep2.mp3"))") }, "\(manifest)")
        #expect(manifest.contains { $0.contains("\tother/feed.xml\t") }, "\(manifest)")
    }

    @Test func sitemapCrawlReadsTheGzippedSitemapAndIndexesTheImages() async throws {
        let sitemap = server.url("/files/sitemap.xml.gz")
        let first = try await run("sitemap/job.lua", ["--var", "sitemap=\(sitemap)"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(listing(out + "/pages") == ["gallery.html", "index.1.html", "index.html"])
        #expect(listing(out + "/images") == ["sunset.png"])
        #expect(!FileManager.default.fileExists(atPath: out + "/sitemap.xml.gz"), "read, then removed")
        let index = try #require(try JSONSerialization.jsonObject(with: Data(bytes(at: out + "/index.json"))) as? [String: Any])
        #expect((index["pages"] as? [String])?.count == 3)
        let images = try #require(index["images"] as? [[String: Any]])
        #expect(images.count == 1)
        #expect(images.first?["sha256"] as? String == sha256Hex(bytes(at: site + "/img/sunset.png")))
        // The next run reads the sitemap again and rewrites its own index.
        let second = try await run("sitemap/job.lua", ["--var", "sitemap=\(sitemap)"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try server.requests(matching: "/files/sitemap.xml.gz").count == 2)
        #expect(FileManager.default.fileExists(atPath: out + "/index.json"))
    }
}
