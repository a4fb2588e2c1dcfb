import Testing

import TestSupport

@testable import DLPipe

/// What `add` makes of a URL: what RFC 3986 does not allow is encoded, the
/// spellings RFC 3986 calls equivalent fold into one, the fragment goes, and a
/// second pass changes nothing.
@Suite struct URLNormalizationTests {
    static let cases: [(String, String)] = [
        ("http://h/a b.txt", "http://h/a%20b.txt"),
        ("http://h/caf\u{E9}/\u{1F600}", "http://h/caf%C3%A9/%F0%9F%98%80"),
        ("http://h/100%.txt", "http://h/100%25.txt"),
        ("http://h/%zz%4", "http://h/%25zz%254"),
        ("http://h/ok%20%2fkept", "http://h/ok%20%2Fkept"),
        ("http://h/p?q=a b&r=\"x\"#frag ment#2", "http://h/p?q=a%20b&r=%22x%22"),
        ("http://h/{a}|b^c`d<e>\\f", "http://h/%7Ba%7D%7Cb%5Ec%60d%3Ce%3E%5Cf"),
        ("  http://h/x\n", "http://h/x"),
        ("http://us er:p%@h/x", "http://us%20er:p%25@h/x"),
        ("http://b\u{FC}cher.example/x", "http://xn--bcher-kva.example/x"),
        ("http://U:P@B\u{DC}CHER.Example:80/x", "http://U:P@xn--bcher-kva.example/x"),
        ("https://b\u{FC}cher.example:8443/b\u{FC}cher", "https://xn--bcher-kva.example:8443/b%C3%BCcher"),
        ("http://\u{4F8B}\u{3048}.\u{30C6}\u{30B9}\u{30C8}/", "http://xn--r8jz45g.xn--zckzah/"),
        ("HTTP://Host.Example:80/A?B#C", "http://host.example/A?B"),
        ("https://H:443/x", "https://h/x"),
        ("https://h:80/x", "https://h:80/x"),
        ("http://h:/x", "http://h/x"),
        ("http://U:P@H/x", "http://U:P@h/x"),
        ("http://[::1]:80/x", "http://[::1]/x"),
        ("http://[::1]/x", "http://[::1]/x"),
        ("http://h", "http://h/"),
        ("http://h?a b", "http://h/?a%20b"),
        ("http://h/a/../b", "http://h/b"),
        ("http://h/./a/./b/.", "http://h/a/b/"),
        ("http://h/a/b/../../../c", "http://h/c"),
        ("http://h/a/%2E%2E/b", "http://h/b"),
        ("http://h/a/..?x=../y", "http://h/?x=../y"),
        ("http://h/%7Epic/%7epic/~pic/%41", "http://h/~pic/~pic/~pic/A"),
        ("http://h/x?q=%2f%3d%26", "http://h/x?q=%2F%3D%26"),
        ("http://h/page#top", "http://h/page"),
        ("http://h/page#", "http://h/page"),
        ("not a url", "not a url"),
        ("ftp://h/a b", "ftp://h/a%20b"),
    ]

    @Test(arguments: cases) func encodesWhatMustBeEncoded(raw: String, expected: String) {
        #expect(URLNormalization.normalize(raw) == expected)
        #expect(URLNormalization.normalize(expected) == expected, "normalising twice changes nothing")
    }

    @Test func normalURLsAreUnchangedByteForByte() {
        let valid = ["https://example.com/a/b.tar.gz?x=1&y=%2F", "http://[::1]:8080/p;q=1", "http://u:p@h/~x/!$&'()*+,;=:@"]
        for url in valid { #expect(URLNormalization.normalize(url) == url) }
    }

    /// The fast path takes a URL only when the rules would leave it as it is.
    @Test func theFastPathTakesOnlyNormalURLs() {
        let normal = ["http://h/", "https://a-b.example.com:8443/x/y.tar.gz?q=1&r=/./..", "http://h/.../a.b/", "http://h/a..b/c."]
        for url in normal {
            #expect(URLNormalization.isNormal(url), "\(url)")
            #expect(URLNormalization.normalizedByRules(url) == url, "\(url)")
        }
        let other = ["http://h", "http://H/", "http://h:80/", "https://h:443/", "http://h:/", "http://h:080/", "http://h/.", "http://h/a/..",
                     "http://h/./a", "http://h/a/../b?c", "http://h/%41", "http://h/#x", "http://h/a b", "HTTP://h/", "http://u@h/", "http://[::1]/"]
        for url in other { #expect(!URLNormalization.isNormal(url), "\(url)") }
        var random = SplitMix64(seed: 6)
        let alphabet = Array("aH%2F/?#:.0\u{E9} ".unicodeScalars)
        for _ in 0..<5000 {
            var text = random.next() % 2 == 0 ? "http://h" : "https://"
            for _ in 0..<Int(random.next() % 12) { text.unicodeScalars.append(alphabet[Int(random.next() % UInt64(alphabet.count))]) }
            if URLNormalization.isNormal(text) {
                #expect(URLNormalization.normalizedByRules(text) == text, "\(text)")
            }
        }
    }

    @Test func referencesAreEncodedAsPaths() {
        #expect(URLNormalization.normalizeReference("a b/c%") == "a%20b/c%25")
        #expect(URLNormalization.normalizeReference("//h/x y") == "//h/x%20y")
        #expect(URLNormalization.normalizeReference("?q=\u{E9}#a#b") == "?q=%C3%A9")
        #expect(URLNormalization.normalizeReference("../a/./b") == "../a/./b", "a relative path keeps its dots until it is resolved")
        #expect(URLNormalization.normalizeReference("http://h/ ") == "http://h/")
    }

    @Test func randomTextIsStableAfterOnePass() {
        var random = SplitMix64(seed: 18)
        let alphabet = Array("aB%2F /?#:@.\u{E9}\"{}|\\^`<>\t".unicodeScalars)
        for _ in 0..<2000 {
            var text = "http://h/"
            for _ in 0..<Int(random.next() % 16) { text.unicodeScalars.append(alphabet[Int(random.next() % UInt64(alphabet.count))]) }
            let once = URLNormalization.normalize(text)
            #expect(once == URLNormalization.normalizedByRules(text), "the fast path agrees: \(text)")
            #expect(URLNormalization.normalize(once) == once, "\(text)")
            #expect(once.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "\(once)")
        }
    }
}
