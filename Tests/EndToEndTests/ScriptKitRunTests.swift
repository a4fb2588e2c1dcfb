import Foundation
import Testing

/// The script kit in real runs against the loopback server: a sitemap crawl
/// from a .xml.gz (dl.gunzip, dl.xml.parse, dl.html.links, dl.append, dl.write,
/// dl.remove of the sitemap's own download), a paginated JSON API (dl.json,
/// dl.time.parse, per-item metadata files), and the no-clobber rule.
@Suite struct ScriptKitRunTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "kit")
    }

    /// gzip's output for `text` (the gzip program, as a site makes its .xml.gz).
    static func gzip(_ text: String) throws -> [UInt8] {
        let path = try TempDir.make("gz") + "/data"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let process = try Subprocess("/bin/sh", ["-c", "gzip -c -n < \"$0\" > \"$0.gz\"", path])
        _ = process.waitForExit(within: 10)
        _ = process.finish()
        return bytes(at: path + ".gz")
    }

    static let crawl = """
        dl.add(dl.var.base .. "/sitemap.xml.gz")
        local pages = {}
        dl.on("finished", function(d, f)
          if d.name:match("%.xml%.gz$") then
            local sitemap = dl.xml.parse(dl.gunzip(dl.read(f.path)))
            for _, url in ipairs(sitemap.children) do
              for _, child in ipairs(url.children) do
                if child.localname == "loc" and child.ns == "http://www.sitemaps.org/schemas/sitemap/0.9" then
                  dl.add{ url = child.text, dir = "pages" }
                end
              end
            end
            dl.remove(f.path)  -- data, not a download to keep: the next run fetches it again
          elseif f.type == "text/html" then
            pages[#pages + 1] = d.name
            for _, link in ipairs(dl.html.links(dl.read(f.path), d.url)) do
              if link.tag == "img" then dl.add{ url = link.url, dir = "img" } end
            end
          else
            dl.append("manifest.tsv", d.name .. "\\t" .. f.sha256)
          end
        end)
        dl.on("done", function(s)
          table.sort(pages)
          dl.write("index.json", dl.json.encode({ pages = pages, finished = s.finished }))
        end)
        """

    @Test func aSitemapCrawlFromGzipWritesAManifestAndAnIndex() async throws {
        let ns = "http://www.sitemaps.org/schemas/sitemap/0.9"
        let sitemap = """
            <?xml version="1.0" encoding="UTF-8"?>
            <urlset xmlns="\(ns)">
              <url><loc>\(server.url("/files/a.html"))</loc></url>
              <url><loc>
                \(server.url("/files/b.html"))
              </loc></url>
            </urlset>
            """
        try server.put("sitemap.xml.gz", bytes: try Self.gzip(sitemap))
        try server.put("a.html", bytes: Array(#"<p><img src="one.png"> <img srcset="two.png 1x, three.png 2x"></p>"#.utf8))
        try server.put("b.html", bytes: Array(#"<a href="a.html">a</a><img src="/files/one.png?x=1&amp;y=2">"#.utf8))
        for name in ["one.png", "two.png", "three.png"] { try server.put(name, randomBytes: 1000) }
        try job.write("crawl.lua", Self.crawl)

        let first = try await job.run("crawl.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(listing(out + "/pages") == ["a.html", "b.html"])
        #expect(listing(out + "/img").count == 4)  // one.png, two.png, three.png and one.png?x=1&y=2's file
        #expect(!FileManager.default.fileExists(atPath: out + "/sitemap.xml.gz"), "the script removed the sitemap")
        let manifest = String(decoding: bytes(at: out + "/manifest.tsv"), as: UTF8.self)
        #expect(manifest.split(separator: "\n").count == 4, "\(manifest)")
        #expect(manifest.contains("two.png\t"), "\(manifest)")
        let index = try #require(try JSONSerialization.jsonObject(with: Data(bytes(at: out + "/index.json"))) as? [String: Any])
        #expect(index["pages"] as? [String] == ["a.html", "b.html"])
        #expect(index["finished"] as? Int == 7)
        // The state forgot the sitemap with its file: 2 pages and 4 images are left.
        let status = try await DLPipeRun.run(["status", out])
        #expect(status.stdout.contains("downloads: 6 finished"), "\(status.stdout)")

        // Again: the sitemap was forgotten with its file, so it is fetched again;
        // the index (a script's own file) is replaced, the manifest grows.
        let second = try await job.run("crawl.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try server.requests(matching: "/files/sitemap.xml.gz").count == 2)
        let grown = String(decoding: bytes(at: out + "/manifest.tsv"), as: UTF8.self)
        #expect(grown.split(separator: "\n").count == 8, "\(grown)")
        #expect(FileManager.default.fileExists(atPath: out + "/index.json"))
        #expect(!listing(out).contains { $0.contains(".dlpipe-") }, "no temporary file is left: \(listing(out))")
    }

    @Test func aPaginatedJSONAPIWritesMetadataBesideTheFiles() async throws {
        try server.put("api/1.json", bytes: Array("""
            {"items": [{"id": 101, "file": "a.bin", "published": "Tue, 10 Jun 2003 04:00:00 GMT"},
                       {"id": 102, "file": "b.bin", "published": "2003-06-10T06:00:00+02:00", "title": "B \\u00e9\\ud83d\\ude00"}],
             "next": "2.json"}
            """.utf8))
        try server.put("api/2.json", bytes: Array(#"{"items": [{"id": 9007199254740993, "file": "c.bin", "published": null}], "next": null}"#.utf8))
        for name in ["a.bin", "b.bin", "c.bin"] { try server.put(name, randomBytes: 500) }
        try job.write("api.lua", """
            dl.add{ url = dl.var.base .. "/api/1.json", dir = "api" }
            dl.on("finished", function(d, f)
              if d.dir == "api" then
                local page = dl.json.decode(dl.read(f.path))
                for _, item in ipairs(page.items) do
                  dl.add{ url = dl.var.base .. "/" .. item.file, meta = item }
                end
                if page.next ~= dl.json.null then dl.add{ url = dl.url.resolve(d.url, page.next), dir = "api" } end
                dl.remove(f.path)
              else
                local item = d.meta
                local published = item.published ~= dl.json.null and dl.time.parse(item.published) or nil
                dl.write("meta/" .. item.id .. ".json", dl.json.encode({
                  id = item.id, title = item.title, published = published, sha256 = f.sha256, path = d.name }))
              end
            end)
            """)
        let run = try await job.run("api.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(listing(out + "/meta") == ["101.json", "102.json", "9007199254740993.json"])
        #expect(listing(out + "/api").isEmpty, "the pages were removed: \(listing(out + "/api"))")
        let b = try #require(try JSONSerialization.jsonObject(with: Data(bytes(at: out + "/meta/102.json"))) as? [String: Any])
        #expect(b["title"] as? String == "B é😀")
        #expect(b["published"] as? Int == 1_055_217_600)
        #expect((b["sha256"] as? String)?.count == 64)
        let c = String(decoding: bytes(at: out + "/meta/9007199254740993.json"), as: UTF8.self)
        #expect(c.contains(#""id":9007199254740993"#), "a 64-bit id stays exact: \(c)")
        #expect(!c.contains("published"), "\(c)")
    }

    @Test func aGzipBombFailsItsOwnDownloadAndTheRunGoesOn() async throws {
        // 200 MiB of zeros in about 200 KiB: more than half of the 256 MiB cap.
        let bomb = try TempDir.make("bomb") + "/bomb.xml.gz"
        let packer = try Subprocess("/bin/sh", ["-c", "head -c 209715200 /dev/zero | gzip -1 -c -n > \"$0\"", bomb])
        _ = await offThePool { packer.waitForExit(within: 60) }
        _ = packer.finish()
        try server.put("bomb.xml.gz", bytes: bytes(at: bomb))
        try server.put("fine.xml.gz", bytes: try Self.gzip("<urlset><url><loc>x</loc></url></urlset>"))
        try job.write("bomb.lua", """
            dl.add(dl.var.base .. "/bomb.xml.gz")
            dl.add(dl.var.base .. "/fine.xml.gz")
            dl.on("finished", function(d, f)
              local urlset = dl.xml.parse(dl.gunzip(dl.read(f.path)))
              dl.log(d.name, "lists", #urlset.children)
            end)
            """)
        let run = try await job.run("bomb.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 1, "one download failed: \(run.stderr)")
        let failed = run.events("failed")
        #expect(failed.count == 1)
        #expect(failed.first?["kind"] as? String == "hook")
        let message = failed.first?["message"] as? String ?? ""
        #expect(message.contains("bomb.lua:4: dl.gunzip: the data inflates to more than"), "\(message)")
        #expect(run.logLines(containing: "fine.xml.gz\tlists\t1").count == 1, "\(run.stderr)")
        #expect(FileManager.default.fileExists(atPath: out + "/bomb.xml.gz.part"), "a failed finished handler keeps the file as .part")
    }

    @Test func scriptsNeverReplaceAFileTheyDidNotWrite() async throws {
        let served = try server.put("x.bin", randomBytes: 100)
        try "the user's notes".write(toFile: out + "/notes.txt", atomically: true, encoding: .utf8)
        try job.write("clobber.lua", """
            dl.add(dl.var.base .. "/x.bin")
            dl.on("finished", function(d, f)
              local ok, err = pcall(dl.write, "notes.txt", "replaced")
              dl.log("notes", ok, err)
              ok, err = pcall(dl.write, d.name, "replaced")
              dl.log("download", ok, err)
              ok, err = pcall(dl.remove, "notes.txt")
              dl.log("remove", ok, err)
              ok, err = pcall(dl.write, "../outside.txt", "x")
              dl.log("outside", ok, err)
            end)
            dl.on("done", function() dl.append("notes.txt", "more") end)
            """)
        let run = try await job.run("clobber.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try String(contentsOfFile: out + "/notes.txt", encoding: .utf8) == "the user's notes")
        #expect(sameBytes(out + "/x.bin", served))
        let notes = run.logLines(containing: "notes\tfalse").first ?? ""
        #expect(notes.contains("dl.write: notes.txt is already there and no script wrote it"), "\(run.stderr)")
        #expect(run.logLines(containing: "download\tfalse").first?.contains("x.bin is a download's file") == true, "\(run.stderr)")
        #expect(run.logLines(containing: "remove\tfalse").first?.contains("was not placed by dlpipe") == true, "\(run.stderr)")
        #expect(run.logLines(containing: "outside\tfalse").first?.contains("leaves the output directory") == true, "\(run.stderr)")
        #expect(run.stderr.contains("dl.append: notes.txt is already there and no script wrote it"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: (out as NSString).deletingLastPathComponent + "/outside.txt"))
    }
}
