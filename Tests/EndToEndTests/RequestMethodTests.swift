import Foundation
import Testing

/// `method` and `body` in `dl.add`: what reaches the server, redirects, and
/// the deduplication key.
@Suite struct RequestMethodTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "request-method")
    }

    private func run(_ source: String, _ extra: [String] = []) async throws -> DLPipeRun {
        try await job.run(source: source, out: out, extra)
    }

    /// The job logs what the echo route saw for each download: `echo TAG METHOD BODY TYPE`.
    private let logEcho = """
        dl.on("finished", function(d, f)
          local e = dl.json.decode(f.body)
          dl.log("echo", d.meta, e.method, e.body, e.content_type == dl.json.null and "-" or e.content_type)
        end)
        """

    private func echoes(_ run: DLPipeRun) -> Set<String> {
        Set(run.logLines(containing: "echo\t").map { line in
            String(line[line.range(of: "echo\t")!.upperBound...])
        })
    }

    @Test func postsJSONAndFormsAndOtherMethods() async throws {
        let echo = server.url("/echo-request")
        let run = try await run("""
            dl.add{ url = "\(echo)", into = "memory", meta = "json", body = dl.json.encode({ a = 1 }),
                    headers = { ["Content-Type"] = "application/json" } }
            dl.add{ url = "\(echo)?form", into = "memory", meta = "form", body = "q=two+words&n=3" }
            dl.add{ url = "\(echo)?put", into = "memory", meta = "put", method = "put", body = "x" }
            dl.add{ url = "\(echo)?delete", into = "memory", meta = "delete", method = "DELETE" }
            dl.add{ url = "\(echo)?empty", into = "memory", meta = "empty", method = "POST" }
            \(logEcho)
            """)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(echoes(run) == [
            "json\tPOST\t{\"a\":1}\tapplication/json",
            "form\tPOST\tq=two+words&n=3\tapplication/x-www-form-urlencoded",
            "put\tPUT\tx\tapplication/x-www-form-urlencoded",
            "delete\tDELETE\t\t-",
            "empty\tPOST\t\tapplication/x-www-form-urlencoded",
        ], "\(run.stderr)")
    }

    /// Every redirect code against every method, checked against curl 7.88's
    /// own method logic (`curl -L` with `--data`, `-T` for PUT): a 303 makes a
    /// GET of anything; a 301 or 302 makes a GET of a POST only, and keeps a
    /// PUT's or DELETE's method and body (RFC 9110 15.4.2/15.4.3); 307 and 308
    /// keep both. (curl's `-X` is different: it keeps its method on every hop.)
    @Test func redirectsFollowCurlsRules() async throws {
        let target = "/echo-request"
        func hop(_ code: Int) -> String { server.url("/redirect-code/\(code)?url=\(target)") }
        let form = "application/x-www-form-urlencoded"
        var adds: [String] = []
        var expected: Set<String> = []
        for code in [301, 302, 303, 307, 308] {
            for method in ["GET", "POST", "PUT", "DELETE"] {
                let body = method == "POST" || method == "PUT" ? "b" : nil
                let tag = "\(code)\(method)"
                adds.append("dl.add{ url = \"\(hop(code))\", into = \"memory\", meta = \"\(tag)\", "
                    + "method = \"\(method)\"\(body.map { ", body = \"\($0)\"" } ?? "") }")
                let becomesGet = code == 303 || (method == "POST" && (code == 301 || code == 302))
                if becomesGet || body == nil {
                    expected.insert("\(tag)\t\(becomesGet ? "GET" : method)\t\t-")
                } else {
                    expected.insert("\(tag)\t\(method)\tb\t\(form)")
                }
            }
        }
        let run = try await run(adds.joined(separator: "\n") + "\n" + logEcho)
        #expect(run.status == 0, "\(run.stderr)")
        let seen = echoes(run)
        #expect(seen.count == 20, "\(run.stderr)")
        for line in expected.sorted() { #expect(seen.contains(line), "\(line): \(seen.sorted())") }
    }

    @Test func aRequestWithABodyIsNotTheGetOfItsURL() async throws {
        let data = try server.put("p.json", bytes: Array("{}".utf8))
        let echo = server.url("/echo-request")
        let run = try await run("""
            local get = dl.add{ url = "\(echo)", into = "memory", meta = "get" }
            local a = dl.add{ url = "\(echo)", into = "memory", meta = "a", body = "a" }
            local b = dl.add{ url = "\(echo)", into = "memory", meta = "b", body = "b" }
            assert(get ~= a and a ~= b and get ~= b, "three requests")
            assert(dl.add{ url = "\(echo)", into = "memory", body = "a" } == a, "the same body is the same request")
            assert(dl.add{ url = "\(echo)", into = "memory", method = "PUT", body = "a" } ~= a, "another method")
            dl.add{ url = "\(server.url("/files/p.json"))", name = "p.json" }
            \(logEcho.replacingOccurrences(of: "local e", with: "if not f.body then return end\n  local e"))
            """)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/p.json", data))
        let methods = try server.requests(matching: "/echo-request").compactMap { $0["method"] as? String }
        #expect(methods.sorted() == ["GET", "POST", "POST", "PUT"])
        #expect(echoes(run).contains("get\tGET\t\t-"))
    }

    @Test func badMethodsAndBodiesAreLoadErrors() async throws {
        for (spec, words) in [
            ("method = \"HEAD\"", "dl.add: method wants \"GET\", \"POST\", \"PUT\", \"PATCH\" or \"DELETE\", not HEAD"),
            ("method = 1", "dl.add: method wants \"GET\", \"POST\", \"PUT\", \"PATCH\" or \"DELETE\", not 1"),
            ("body = { a = 1 }", "dl.add: body wants a string (dl.json.encode(t) or dl.url.query(t) makes one), not a table"),
        ] {
            let run = try await run("""
                dl.add{ url = "\(server.url("/echo-request"))", \(spec) }
                """)
            #expect(run.status == 2, "\(spec): \(run.stderr)")
            #expect(run.stderr.contains("job.lua:1: \(words)"), "\(run.stderr)")
            #expect(try server.requests(matching: "/echo-request").isEmpty)
        }
    }
}
