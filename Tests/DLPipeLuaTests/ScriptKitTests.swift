import Foundation
import Testing

@testable import DLPipeLua

/// The script kit's pure functions (dl.json, dl.xml, dl.html.links, dl.gunzip,
/// dl.sha256, dl.url.encode/decode/query, dl.time.parse), through the prelude
/// as scripts call them, with their bounds: the time budget and the memory cap.
@Suite struct ScriptKitTests {
    /// A host with the prelude, as a run has it.
    static func host(memoryLimit: Int = 64 << 20) throws -> ScriptHost {
        try ScriptHost(unsafe: false, memoryLimit: memoryLimit, budget: 2, vars: [:], log: { _ in })
    }

    /// Runs `source` as the top level of job.lua and returns its results.
    static func eval(_ source: String, memoryLimit: Int = 64 << 20) throws -> [LuaValue] {
        try host(memoryLimit: memoryLimit).runtime.run(source, chunkName: "=job.lua")
    }

    /// The error message of `source`, or nil (with an issue) when it succeeds.
    static func failure(_ source: String, memoryLimit: Int = 64 << 20, budget: Double = 5) throws -> LuaError? {
        let host = try host(memoryLimit: memoryLimit)
        let runtime = host.runtime
        do {
            let chunk = try runtime.load(Array(source.utf8), chunkName: "=job.lua")
            let results = try runtime.call(chunk, [], budget: budget)
            Issue.record("expected an error, got \(results)")
            return nil
        } catch {
            return error
        }
    }

    /// gzip's output for `input` (the gzip program, as a user would make a .gz).
    static func gzip(_ input: Data) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gzip", "-c", "-n"]
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        let writer = Thread {
            stdin.fileHandleForWriting.write(input)
            try? stdin.fileHandleForWriting.close()
        }
        writer.start()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return output
    }

    // MARK: dl.json

    @Test func jsonDecodesTypesIntegersNullAndEscapes() throws {
        let out = try Self.eval(#"""
            local t = dl.json.decode('\239\187\191 {"a": 1, "big": 12345678901234567890, "f": 1.5, "e": 1e3, ' ..
              '"n": null, "s": "q\\"\\\\\\/\\b\\f\\n\\r\\t \\u00e9 \\ud83d\\ude00 \\ud800x \\udc00", ' ..
              '"l": [1, null, 3], "o": {}, "neg": -0, "t": true, "no": false}')
            return math.type(t.a), math.type(t.big), t.big, t.f, math.type(t.e), t.n == dl.json.null,
              t.s, #t.l, t.l[2] == dl.json.null, next(t.o) == nil, math.type(t.neg), t.t, t.no
            """#)
        #expect(out[0] == "integer")
        #expect(out[1] == "float")
        #expect(out[2].double == 12345678901234567890.0)
        #expect(out[3] == 1.5)
        #expect(out[4] == "float")
        #expect(out[5] == true)
        #expect(out[6].text == "q\"\\/\u{8}\u{C}\n\r\t é 😀 \u{FFFD}x \u{FFFD}")
        #expect(out[7] == 3)
        #expect(out[8] == true)
        #expect(out[9] == true)
        #expect(out[10] == "integer")
        #expect(out[11] == true)
        #expect(out[12] == false)
    }

    @Test func jsonErrorsNameTheLineAndColumn() throws {
        let cases: [(String, String)] = [
            (#"dl.json.decode('{\n  "a": 1,\n}')"#, "job.lua:1: dl.json.decode: an object key must be a string at line 3, column 1"),
            (#"dl.json.decode('[1, 2] x')"#, "text after the value at line 1, column 8"),
            (#"dl.json.decode('[1, 2')"#, "',' or ']' expected in an array at the end of the text"),
            (#"dl.json.decode('"a\tb"')"#, "control character in a string"),
            (#"dl.json.decode('"\\x"')"#, "unknown escape"),
            (#"dl.json.decode('"\\u12"')"#, "\\u wants four hex digits"),
            (#"dl.json.decode('01')"#, "may not start with 0"),
            (#"dl.json.decode('nul')"#, "unexpected character at line 1, column 1"),
            (#"dl.json.decode('')"#, "a value expected at the end of the text"),
            (#"dl.json.decode(string.rep('[', 513) .. string.rep(']', 513))"#, "nested deeper than 512"),
            (#"dl.json.decode({})"#, "bad argument #1"),
        ]
        for (source, expected) in cases {
            let error = try Self.failure(source)
            #expect(error?.message.contains(expected) == true, "\(source): \(error?.message ?? "no error")")
            #expect(error?.message.hasPrefix("job.lua:1:") == true, "\(source): \(error?.message ?? "")")
        }
    }

    @Test func jsonEncodesSortedKeysArraysAndShortestNumbers() throws {
        let out = try Self.eval(#"""
            return dl.json.encode({ b = 1, a = { 1, 2.5, "x" }, c = {}, d = dl.json.null, [3] = true }),
              dl.json.encode(0.1), dl.json.encode(1/3), dl.json.encode(2^53), dl.json.encode(math.maxinteger),
              dl.json.encode("é\n\"\0\127"), dl.json.encode({ 1, nil, 3 }), dl.json.encode(nil),
              dl.json.encode(dl.json.decode('{"k":[{"x":null}],"n":-1.25e-7}'))
            """#)
        #expect(out[0] == #"{"3":true,"a":[1,2.5,"x"],"b":1,"c":{},"d":null}"#)
        #expect(out[1] == "0.1")
        #expect(out[2] == "0.3333333333333333")
        #expect(out[3] == "9007199254740992")
        #expect(out[4] == "9223372036854775807")
        #expect(out[5].text == "\"é\\n\\\"\\u0000\u{7F}\"")
        #expect(out[6] == #"{"1":1,"3":3}"#)
        #expect(out[7] == "null")
        #expect(out[8] == #"{"k":[{"x":null}],"n":-1.25e-07}"#)
    }

    @Test func jsonEncodeRefusesWhatJSONCannotSay() throws {
        let cases: [(String, String)] = [
            ("local t = {}; t.t = t; dl.json.encode(t)", "nested deeper than 512"),
            ("dl.json.encode({ 0/0 })", "NaN has no JSON form"),
            ("dl.json.encode(1/0)", "an infinite number has no JSON form"),
            ("dl.json.encode('\\255')", "not valid UTF-8 (byte 1 is 0xff)"),
            ("dl.json.encode({ print })", "a function value has no JSON form"),
            ("dl.json.encode({ [true] = 1 })", "a boolean key has no JSON form"),
            ("dl.json.encode({ [1.5] = 1 })", "a number key has no JSON form"),
        ]
        for (source, expected) in cases {
            let error = try Self.failure(source)
            #expect(error?.message.contains(expected) == true, "\(source): \(error?.message ?? "no error")")
        }
    }

    @Test func jsonWorkIsBoundedByTheBudgetAndTheCap() throws {
        // A large document under a tiny budget: the decoder stops at its deadline.
        // The cap is far away (on a quiet machine the 800,000 tables reached the
        // default 256 MiB before the deadline), and most of the budget is spent
        // first, so the decode's own 50 ms are what must end it.
        let timeout = try Self.failure("""
            local s = '[' .. string.rep('{"a":[1,2,3]},', 400000) .. '1]'
            local start = os.clock()
            while os.clock() - start < 0.25 do end
            dl.json.decode(s)
            """, memoryLimit: 2 << 30, budget: 0.3)
        #expect(timeout?.kind == .timeout, "\(timeout?.message ?? "")")
        // Tables past the memory cap: a memory error, and the state stays usable.
        let memory = try Self.failure("dl.json.decode('[' .. string.rep('[1,2,3,4],', 500000) .. '1]')", memoryLimit: 16 << 20)
        #expect(memory?.kind == .memory, "\(memory?.message ?? "")")
        // An encoding that doubles a shared table 40 times: the cap, not all of memory.
        let bomb = try Self.failure("local t = {'x'} for i = 1, 40 do t = { t, t } end dl.json.encode(t)", memoryLimit: 16 << 20, budget: 10)
        #expect(bomb?.kind == .memory || bomb?.kind == .timeout, "\(bomb?.message ?? "")")
    }

    // MARK: dl.xml.parse

    @Test func xmlParsesSitemapsAtomAndRSSWithNamespaces() throws {
        let out = try Self.eval(#"""
            local sitemap = dl.xml.parse([==[<?xml version="1.0" encoding="UTF-8"?>
            <urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
              <url>
                <loc>
                  http://h/a?x=1&amp;y=2
                </loc>
                <image:image><image:loc><![CDATA[http://h/i.png]]></image:loc></image:image>
              </url>
              <url><loc>http://h/b</loc></url>
            </urlset>]==])
            local url = sitemap.children[1]
            local image = url.children[2]
            local atom = dl.xml.parse([[<feed xmlns="http://www.w3.org/2005/Atom" xml:lang="en">
              <entry><title type="text">T &lt;1&gt;</title><link rel="enclosure" href="http://h/e.mp3"/></entry></feed>]])
            local entry = atom.children[1]
            local rss = dl.xml.parse([[<rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/"><channel>
              <item><title>A</title><media:content url="http://h/v.mp4"/><itunes:image href="x"/></item></channel></rss>]])
            local item = rss.children[1].children[1]
            return sitemap.name, sitemap.ns, #sitemap.children, url.children[1].text, image.name, image.localname,
              image.ns, image.children[1].text, atom.ns, atom.attrs["xml:lang"], entry.children[1].text,
              entry.children[2].attrs.href, entry.children[2].ns, item.children[2].attrs.url, item.children[2].ns,
              item.children[3].ns, item.children[3].localname, rss.attrs.version, rss.ns
            """#)
        let expected: [LuaValue] = [
            "urlset", "http://www.sitemaps.org/schemas/sitemap/0.9", 2, "http://h/a?x=1&y=2", "image:image", "image",
            "http://www.google.com/schemas/sitemap-image/1.1", "http://h/i.png", "http://www.w3.org/2005/Atom", "en",
            "T <1>", "http://h/e.mp3", "http://www.w3.org/2005/Atom", "http://h/v.mp4", "http://search.yahoo.com/mrss/",
            .nil_, "image", "2.0", .nil_,
        ]
        #expect(Array(out.prefix(expected.count)) + Array(repeating: LuaValue.nil_, count: max(0, expected.count - out.count)) == expected)
    }

    @Test func xmlErrorsAndRefusals() throws {
        let cases: [(String, String)] = [
            ("dl.xml.parse('<a>\\n<b></a>')", "job.lua:1: dl.xml.parse: mismatched tag at line 2, column 6"),
            ("dl.xml.parse('')", "dl.xml.parse: no element found at line 1"),
            ("dl.xml.parse('<a>&nbsp;</a>')", "undefined entity"),
            (#"dl.xml.parse('<!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;">]><x>&b;</x>')"#,
             "declares entities, which are refused"),
            ("dl.xml.parse(string.rep('<a>', 1001) .. string.rep('</a>', 1001))", "nested deeper than 1000"),
            // With an external DTD expat cannot know &foo; is undeclared: it was dropped silently.
            (#"dl.xml.parse('<!DOCTYPE x SYSTEM "x.dtd">\n<x>a&foo;b</x>')"#,
             "dl.xml.parse: the document uses the entity &foo; which it does not declare (an external DTD is never read) at line 2"),
        ]
        for (source, expected) in cases {
            let error = try Self.failure(source)
            #expect(error?.message.contains(expected) == true, "\(source): \(error?.message ?? "no error")")
        }
        // Expat's own memory counts against the cap: a huge attribute value in a small state.
        let memory = try Self.failure("dl.xml.parse('<a b=\"' .. string.rep('x', 6000000) .. '\"/>')", memoryLimit: 16 << 20)
        #expect(memory != nil)
        #expect(memory?.message.contains("needs more memory than the memory cap leaves") == true, "\(memory?.message ?? "")")
    }

    // MARK: dl.html.links

    @Test func htmlLinksResolveHrefSrcAndSrcset() throws {
        let out = try Self.eval(#"""
            local links = dl.html.links([[<!DOCTYPE html><html><head><BASE HREF="/sub/">
            <link rel=stylesheet href=style.css></head><body>
            <a href="x.html?a=1&amp;b=2#top">x</a> <img src = ' i.png ' srcset="s1.png 1x, s2.png 2x,s3.png">
            <!-- <a href="commented.html"> -->
            <script>var s = "<a href='scripted.html'>";</script>
            <style>a[href="styled.html"] {}</style>
            <a href="mailto:x@y">m</a><a href="javascript:void(0)">j</a><a href="//cdn.h/c.js">c</a>
            <source srcset="data:image/png;base64,AAA= 1x, v.webp 2x"><a href="&#x2F;abs&#47;p">e</a>
            </body></html>]], "http://h/dir/page.html")
            local out = {}
            for _, l in ipairs(links) do out[#out + 1] = l.tag .. " " .. l.attr .. " " .. l.url end
            return table.concat(out, "\n")
            """#)
        #expect(out.first?.text == """
            link href http://h/sub/style.css
            a href http://h/sub/x.html?a=1&b=2
            img src http://h/sub/i.png
            img srcset http://h/sub/s1.png
            img srcset http://h/sub/s2.png
            img srcset http://h/sub/s3.png
            a href http://cdn.h/c.js
            source srcset http://h/sub/v.webp
            a href http://h/abs/p
            """)
        let error = try Self.failure("dl.html.links('<a href=x>', 'relative/base')")
        #expect(error?.message.contains("job.lua:1: dl.html.links: the base \"relative/base\" is not an absolute URL") == true,
                "\(error?.message ?? "")")
    }

    @Test func htmlScanIsBoundedByTheBudget() throws {
        let timeout = try Self.failure("""
            local page = string.rep('<a href="/x">x</a>', 2000000)
            local start = os.clock()
            while os.clock() - start < 0.05 do end
            dl.html.links(page, "http://h/")
            """, memoryLimit: 256 << 20, budget: 0.3)
        #expect(timeout?.kind == .timeout, "\(timeout?.message ?? "")")
    }

    // MARK: dl.gunzip

    @Test func gunzipInflatesMembersAndRefusesBadData() throws {
        let text = Data(String(repeating: "<url><loc>http://h/a</loc></url>\n", count: 5000).utf8)
        let twoMembers = try Self.gzip(text) + Self.gzip(Data("tail".utf8)) + Data(count: 16)
        let host = try Self.host()
        host.runtime.setGlobal("GZ", .string([UInt8](twoMembers)))
        let out = try host.runtime.run("local s = dl.gunzip(GZ) return #s, s:sub(-4), s:sub(1, 10)", chunkName: "=job.lua")
        #expect(out == [.integer(Int64(text.count + 4)), "tail", "<url><loc>"])
        host.runtime.setGlobal("EMPTY", .string([UInt8](try Self.gzip(Data()))))
        #expect(try host.runtime.run("return dl.gunzip(EMPTY)", chunkName: "=job.lua") == [""])
        let whole = [UInt8](try Self.gzip(text))
        let cases: [([UInt8], String)] = [
            (Array("plain text".utf8), "not gzip data (it does not start with 1f 8b)"),
            (Array(whole.prefix(whole.count / 2)), "the gzip data is cut short"),
            (Array(whole.prefix(12)) + [UInt8](repeating: 0xFF, count: 40), "corrupt gzip data"),
            (whole + Array("garbage".utf8), "7 bytes after the gzip data are not gzip data"),
        ]
        for (data, expected) in cases {
            host.runtime.setGlobal("BAD", .string(data))
            do {
                _ = try host.runtime.run("return dl.gunzip(BAD)", chunkName: "=job.lua")
                Issue.record("\(expected): no error")
            } catch {
                #expect(error.message.contains("job.lua:1: dl.gunzip: " + expected), "\(error.message)")
            }
        }
    }

    @Test func aGzipBombFailsClearlyUnderTheCap() throws {
        // 64 MiB of zeros (64 KiB of gzip) in a state capped at 32 MiB.
        let bomb = try Self.gzip(Data(count: 64 << 20))
        #expect(bomb.count < 1 << 20)
        let host = try Self.host(memoryLimit: 32 << 20)
        host.runtime.setGlobal("BOMB", .string([UInt8](bomb)))
        let before = host.runtime.memoryInUse
        do {
            _ = try host.runtime.run("return #dl.gunzip(BOMB)", chunkName: "=job.lua")
            Issue.record("a gzip bomb inflated")
        } catch {
            #expect(error.message.contains("dl.gunzip: the data inflates to more than"), "\(error.message)")
            #expect(error.message.contains("gzip bomb"), "\(error.message)")
        }
        #expect(host.runtime.memoryInUse < before + (4 << 20))
        // Still usable, and a smaller one fits.
        host.runtime.setGlobal("SMALL", .string([UInt8](try Self.gzip(Data(count: 4 << 20)))))
        #expect(try host.runtime.run("return #dl.gunzip(SMALL)", chunkName: "=job.lua") == [.integer(4 << 20)])
    }

    // MARK: dl.sha256, dl.url, dl.time

    @Test func sha256OfStrings() throws {
        let out = try Self.eval("return dl.sha256('abc'), dl.sha256(''), dl.sha256('a\\0b')")
        #expect(out[0] == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(out[1] == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(out[2].text?.count == 64 && out[2] != out[0])
        #expect(try Self.failure("dl.sha256(5)")?.message.contains("job.lua:1: dl.sha256 wants a string") == true)
    }

    @Test func urlEncodeDecodeAndQuery() throws {
        let out = try Self.eval("""
            return dl.url.encode("a b/é~-._?&="), dl.url.decode("a%20b%2Fc+d%zz%e2%82%ac"),
              dl.url.query{ b = "x y", a = 1, c = { 1, "z&" }, d = true, e = 2.5, [7] = "seven" },
              dl.url.decode(dl.url.encode("\\0\\255 ü")) == "\\0\\255 ü", dl.url.query{}
            """)
        #expect(out[0] == "a%20b%2F%C3%A9~-._%3F%26%3D")
        #expect(out[1] == "a b/c+d%zz€")
        #expect(out[2] == "7=seven&a=1&b=x%20y&c=1&c=z%26&d=true&e=2.5")
        #expect(out[3] == true)
        #expect(out[4] == "")
        #expect(try Self.failure("dl.url.query{ a = {} , b = print }")?.message.contains("job.lua:1: dl.url.query: the value of b is a function") == true)
        #expect(try Self.failure("dl.url.encode({})")?.message.contains("job.lua:1: dl.url.encode wants a string") == true)
        // The kit took its library functions when it loaded: a script that replaces
        // the shared ones (where it still may) does not change what the kit does.
        let tampered = try Self.eval("""
            pcall(function() string.gsub = function() return "evil" end; string.match = string.gsub end)
            return dl.url.encode("a b"), dl.time.parse("2003-06-10T04:00:00Z")
            """)
        #expect(tampered == ["a%20b", 1_055_217_600])
    }

    @Test func timeParseReadsFeedDates() throws {
        let out = try Self.eval("""
            local p = dl.time.parse
            return p("Tue, 10 Jun 2003 04:00:00 GMT"), p("10 Jun 2003 06:00:00 +0200"), p("Tue, 10 Jun 03 00:00 EDT"),
              p("2003-06-10T04:00:00Z"), p("2003-06-10t06:00:00+02:00"), p("2003-06-10 04:00:00.25z"),
              p("2003-06-10"), p("  Mon, 29 Feb 2016 00:00:00 UT  "), p("1969-12-31T23:59:59Z"),
              p("2003-02-29T00:00:00Z"), p("2003-13-01"), p("yesterday"), p("Tue, 10 Jun 2003 25:00:00 GMT"),
              p("10 Foo 2003 04:00:00 GMT"), p("2003-06-10T04:00:00+2"), p("Tue, 10 Jun 2003 04:00:00 XYZ")
            """)
        let expected: [LuaValue] = [
            1_055_217_600, 1_055_217_600, 1_055_217_600, 1_055_217_600, 1_055_217_600, 1_055_217_600.25,
            1_055_203_200, 1_456_704_000, -1,
        ]
        #expect(Array(out.prefix(9)) == expected)
        #expect(out.count <= 9 || out.dropFirst(9).allSatisfy { $0 == .nil_ }, "\(out)")
        #expect(try Self.failure("dl.time.parse(5)")?.message.contains("job.lua:1: dl.time.parse wants a string") == true)
    }
}
