import Foundation
import Testing
import TestSupport

@testable import DLPipeLua

/// The kit's C parsers on hostile input: thousands of mutants of valid
/// documents (bytes flipped, inserted, deleted, cut, repeated) each give a value
/// or an error of the parser's own (never a crash or another error), and JSON
/// values survive encode and decode. Seeded: a failure names its seed.
@Suite struct ScriptKitPropertyTests {
    static let seeds: [String: [UInt8]] = [
        "json": Array(#"{"a": [1, -2.5e3, "x\u00e9\ud83d\ude00\n", null, true], "b": {"c": {}, "d": []}, "e": 12345678901234567890}"#.utf8),
        "xml": Array(#"<?xml version="1.0"?><urlset xmlns="http://s/0.9" xmlns:i="http://i"><url><loc> http://h/a?x=1&amp;y </loc><i:image a="b"><![CDATA[c]]></i:image></url><!-- c --></urlset>"#.utf8),
        "html": Array(#"<html><base href="/b/"><a href="x&amp;y">a</a><img src='i.png' srcset="a.png 1x, b.png 2x"><!-- x --><script>"<a href=no>"</script><a href=&#x2F;z>z</a></html>"#.utf8),
    ]

    /// `seed` changed by a few random edits.
    static func mutant(of seed: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var bytes = seed
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            let at = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &rng)
            switch rng.next() % 6 {
            case 0 where !bytes.isEmpty: bytes[at] = UInt8.random(in: 0...255, using: &rng)
            case 1: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: at)
            case 2 where !bytes.isEmpty: bytes.remove(at: at)
            case 3: bytes = Array(bytes.prefix(at))
            case 4 where !bytes.isEmpty:
                let piece = bytes[at..<min(bytes.count, at + Int.random(in: 1...16, using: &rng))]
                bytes.insert(contentsOf: piece, at: at)
            default: bytes.insert(contentsOf: Array("\"<[{&#\\".utf8).randomElement(using: &rng).map { [$0] } ?? [], at: at)
            }
        }
        return bytes
    }

    /// Runs `call` on every mutant; returns the messages of errors that are not the parser's own.
    static func foreignErrors(_ call: String, prefix: String, mutants: [[UInt8]]) throws -> [String] {
        let host = try ScriptKitTests.host()
        host.runtime.setGlobal("MUTANTS", .array(mutants.map { .string($0) }))
        let out = try host.runtime.run("""
            local foreign = {}
            for _, m in ipairs(MUTANTS) do
              local ok, err = pcall(function() return \(call) end)
              if not ok and not tostring(err):find("\(prefix)", 1, true) then foreign[#foreign + 1] = tostring(err) end
            end
            return foreign
            """, chunkName: "=fuzz.lua")
        return (out.first?.array ?? []).compactMap(\.text)
    }

    @Test(arguments: [("json", "dl.json.decode(m)", "dl.json.decode: "), ("xml", "dl.xml.parse(m)", "dl.xml.parse: "),
                      ("html", "dl.html.links(m, 'http://h/p')", "never")])
    func mutantsGiveAValueOrTheParsersOwnError(kind: String, call: String, prefix: String) throws {
        let seed: UInt64 = 0x5EED_0000 + UInt64(kind.utf8.count)
        var rng = SplitMix64(seed: seed)
        let mutants = (0..<3000).map { _ in Self.mutant(of: Self.seeds[kind]!, &rng) }
        let foreign = try Self.foreignErrors(call, prefix: prefix, mutants: mutants)
        #expect(foreign.isEmpty, "seed \(seed): \(foreign.prefix(3))")
    }

    @Test func gzipMutantsGiveTheDataOrAGunzipError() throws {
        let original = Array(String(repeating: "<url><loc>http://h/a</loc></url>\n", count: 200).utf8)
        let packed = [UInt8](try ScriptKitTests.gzip(Data(original)))
        var rng = SplitMix64(seed: 0x6712)
        let mutants = (0..<2000).map { _ in Self.mutant(of: packed, &rng) }
        let foreign = try Self.foreignErrors("dl.gunzip(m)", prefix: "dl.gunzip: ", mutants: mutants)
        #expect(foreign.isEmpty, "seed 0x6712: \(foreign.prefix(3))")
    }

    @Test func randomValuesSurviveEncodeAndDecode() throws {
        let out = try ScriptKitTests.eval(#"""
            math.randomseed(1515)
            local function value(depth)
              local r = math.random(depth > 3 and 5 or 7)
              if r == 1 then return math.random(-2^53, 2^53) end
              if r == 2 then return math.random() * 10 ^ math.random(-20, 20) end
              if r == 3 then
                local t = {}
                for i = 1, math.random(0, 12) do t[i] = utf8.char(math.random(0, 0x10FFFF) // (math.random(4) == 1 and 1 or 4096)) end
                return table.concat(t):gsub("[\xED][\xA0-\xBF].", "x")   -- no surrogates: not UTF-8
              end
              if r == 4 then return math.random(2) == 1 end
              if r == 5 then return dl.json.null end
              local t = {}
              if r == 6 then for i = 1, math.random(1, 5) do t[i] = value(depth + 1) end
              else for i = 1, math.random(0, 5) do t["k" .. math.random(100)] = value(depth + 1) end end
              return t
            end
            local function same(a, b)
              if type(a) ~= type(b) then return false end
              if type(a) ~= "table" then return a == b or (math.type(a) == "float" and a == b) end
              for k, v in pairs(a) do if not same(v, b[k]) then return false end end
              for k in pairs(b) do if a[k] == nil then return false end end
              return true
            end
            local bad = 0
            for i = 1, 2000 do
              local v = { value(0) }
              local text = dl.json.encode(v)
              local back = dl.json.decode(text)
              if not same(v, back) or dl.json.encode(back) ~= text then
                bad = bad + 1
                if bad == 1 then first = text end
              end
            end
            return bad, first
            """#)
        #expect(out.first == 0, "\(out)")
    }
}
