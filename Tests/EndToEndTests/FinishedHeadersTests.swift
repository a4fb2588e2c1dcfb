import Foundation
import Testing

/// `f.headers` in `finished` (issue 40, item 2): the headers of the response
/// that gave the body, as `r.headers` has them in `response`, for a file and
/// for a memory download; a 304's for a file kept unchanged.
@Suite struct FinishedHeadersTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "finished-headers")
        try server.put("a.txt", bytes: Array("alpha".utf8))
        try server.put("a.txt.headers", bytes: Array("""
            Link: <b.txt>; rel="next"
            Set-Cookie: one=1; Path=/
            Set-Cookie: two=2; Expires=Wed, 21 Oct 2037 07:28:00 GMT

            """.utf8))
    }

    @Test func finishedHasTheResponsesHeaders() async throws {
        try job.write("job.lua", """
            local seen = {}
            dl.add(dl.var.base .. "/a.txt")
            dl.add{ url = dl.var.base .. "/a.txt?m=1", into = "memory" }
            dl.on("response", function(d, r) seen[d.id] = r.headers end)
            dl.on("finished", function(d, f)
              local r = seen[d.id] or {}
              local same = true
              for k, v in pairs(r) do
                if type(v) == "table" then same = same and table.concat(v, "|") == table.concat(f.headers[k], "|")
                else same = same and f.headers[k] == v end
              end
              for k in pairs(f.headers) do same = same and r[k] ~= nil end
              local links = dl.http.links(f.headers.link, d.url)
              dl.log("headers", f.body and "memory" or "file", f.unchanged, same, f.headers.etag ~= nil,
                table.concat(f.headers["set-cookie"] or {}, "|"), links[1] and links[1].url or "none", next(f.headers) ~= nil)
            end)
            """)
        let base = server.url("/files")
        let first = try await job.run("job.lua", out: out, ["--var", "base=\(base)"])
        #expect(first.status == 0, "\(first.stderr)")
        let cookies = "one=1; Path=/|two=2; Expires=Wed, 21 Oct 2037 07:28:00 GMT"
        for kind in ["file", "memory"] {
            #expect(first.logLines(containing: "headers\t\(kind)\tfalse\ttrue\ttrue\t\(cookies)\t\(base)/b.txt\ttrue").count == 1,
                    "\(kind): \(first.stderr)")
        }
        // A re-run: the file is kept on a 304 (no response event), whose
        // headers f.headers has: the sidecar's too.
        let second = try await job.run("job.lua", out: out, ["--var", "base=\(base)"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.logLines(containing: "headers\tfile\ttrue\tfalse\ttrue\t\(cookies)\t\(base)/b.txt\ttrue").count == 1,
                "\(second.stderr)")
    }
}
