import Foundation
import Testing
import TestSupport

@testable import DLPipeLua

/// dl.http.links (issue 40, item 2): RFC 8288's Link header as a list of
/// links, URLs absolute against the base, parameters kept; a link-value that
/// does not parse is left out and the others kept.
@Suite struct ScriptKitHTTPLinksTests {
    /// The links of `value` against http://h/a/b, each as "url rel [name=value ...]" (names sorted).
    static func links(_ value: String, base: String = "http://h/a/b") throws -> [String] {
        let host = try ScriptKitTests.host()
        host.runtime.setGlobal("V", LuaValue(value))
        host.runtime.setGlobal("B", LuaValue(base))
        let out = try host.runtime.run("""
            local out = {}
            for _, l in ipairs(dl.http.links(V, B)) do
              local names, rels = {}, {}
              for k, v in pairs(l) do if k ~= "url" and k ~= "rels" and k ~= "rel" then names[#names + 1] = k .. "=" .. v end end
              for r in pairs(l.rels) do rels[#rels + 1] = r end
              table.sort(names); table.sort(rels)
              out[#out + 1] = table.concat({ l.url, tostring(l.rel), table.concat(rels, "+"), table.unpack(names) }, " ")
            end
            return out
            """, chunkName: "=job.lua")
        return (out.first?.array ?? []).compactMap(\.text)
    }

    @Test func linksWithParametersRelsAndRelativeURLs() throws {
        #expect(try Self.links(#"<https://api.example.com/items?page=2&a=1,2>; rel="next", </items?page=9>; rel=last"#)
            == ["https://api.example.com/items?page=2&a=1,2 next next", "http://h/items?page=9 last last"])
        // Several rels (case-insensitive), quoted strings with commas, semicolons and escapes.
        #expect(try Self.links(#"<p2>; REL="Next  last"; title="a, b; c \"q\"", <p3>;rel=prev"#)
            == [#"http://h/a/p2 next last last+next title=a, b; c "q""#, "http://h/a/p3 prev prev"])
        // The first rel counts (RFC 8288 3.3); an anchor is resolved too; names in lower case.
        #expect(try Self.links(#"<x>; rel=next; rel=prev; Anchor="/top"; Type=text/html"#)
            == ["http://h/a/x next next anchor=http://h/top type=text/html"])
        // White space around everything, empty elements, a parameter without a value.
        #expect(try Self.links(" ,, <a> ; rel = \"next\" ; hreflang ,\t<b>;rel=prev  ")
            == ["http://h/a/a next next hreflang=", "http://h/a/b prev prev"])
        // A link without rel: rel is nil, rels empty.
        #expect(try Self.links("<c>; title=t") == ["http://h/a/c nil  title=t"])
    }

    /// An anchor keeps its fragment; an RFC 8187 value (title*) is decoded and
    /// is the title, as RFC 8288 3.4.1 prefers it.
    @Test func anchorsKeepFragmentsAndExtendedValuesAreDecoded() throws {
        #expect(try Self.links(##"<x>; rel=next; anchor="#sec""##) == ["http://h/a/x next next anchor=http://h/a/b#sec"])
        #expect(try Self.links(#"<x>; rel=next; title*=UTF-8'de'n%c3%a4chstes; title="next""#)
            == ["http://h/a/x next next title*=nächstes title=nächstes"])
        // Another charset's value is left as given.
        #expect(try Self.links(#"<x>; title*=ISO-8859-1'de'n%E4chstes"#)
            == ["http://h/a/x nil  title*=ISO-8859-1'de'n%E4chstes title=ISO-8859-1'de'n%E4chstes"])
    }

    @Test func malformedLinkValuesAreLeftOutAndTheOthersKept() throws {
        #expect(try Self.links("garbage, <ok>; rel=next") == ["http://h/a/ok next next"])
        #expect(try Self.links("<bad>; rel=next junk, <good>; rel=prev") == ["http://h/a/good prev prev"])
        #expect(try Self.links("<x>; title=\"a, <y>; rel=next\", <z>") == ["http://h/a/x nil  title=a, <y>; rel=next", "http://h/a/z nil "])
        // A "<" that never closed: the next link-value starts at the next "<", and is kept.
        #expect(try Self.links(#"<bad; rel=x, <../up>; REL="Up""#) == ["http://h/up up up"])
        #expect(try Self.links("<a <b>; rel=next") == ["http://h/a/b next next"])
        for value in ["<a>; title=\"unterminated, <b>; rel=next", "<a", "", "   ", ",", "<a>; x=", "<a>; rel=\"x\\"] {
            #expect(try Self.links(value).isEmpty, "\(value)")
        }
    }

    @Test func nilGivesNoLinksAndBadArgumentsAreErrors() throws {
        #expect(try ScriptKitTests.eval("return #dl.http.links(nil, 'http://h/')") == [.integer(0)])
        let base = try ScriptKitTests.failure("dl.http.links('<a>', 'relative')")
        #expect(base?.message.contains("job.lua:1: dl.http.links wants the absolute URL the header came with") == true, "\(base?.message ?? "")")
        let value = try ScriptKitTests.failure("dl.http.links({}, 'http://h/')")
        #expect(value?.message.contains("job.lua:1: dl.http.links wants a Link header's value (a string, or nil), not a table") == true,
                "\(value?.message ?? "")")
    }

    /// Mutants of a valid header give a list or the call's own error, never another.
    @Test func mutantsGiveAListOrNothingElse() throws {
        var rng = SplitMix64(seed: 0x11_4E)
        let seed = Array(##"<https://h/p?a=1,2>; rel="next last"; title="x, y; \"z\"", </q>; rel=prev; anchor="#a""##.utf8)
        let mutants = (0..<3000).map { _ in ScriptKitPropertyTests.mutant(of: seed, &rng) }
        let foreign = try ScriptKitPropertyTests.foreignErrors("dl.http.links(m, 'http://h/p')", prefix: "never", mutants: mutants)
        #expect(foreign.isEmpty, "\(foreign.prefix(3))")
    }

    /// A huge value is parsed in one pass (20,000 links well within the
    /// budget), and a longer one stops at the handler's budget.
    @Test func longValuesAreLinearAndBoundedByTheBudget() throws {
        #expect(try ScriptKitTests.eval("return #dl.http.links(string.rep('<a>; rel=\"n, ;x\", ', 20000), 'http://h/')")
            == [.integer(20000)])
        let timeout = try ScriptKitTests.failure("""
            local value = string.rep('<a>; rel="next"; title="t, u", ', 3000000)
            local start = os.clock()
            while os.clock() - start < 0.05 do end
            dl.http.links(value, "http://h/")
            """, memoryLimit: 1 << 30, budget: 0.3)
        #expect(timeout?.kind == .timeout, "\(timeout?.message ?? "")")
    }
}
