import Testing

import TestSupport

@testable import DLPipe

/// What `add` makes of a URL: what RFC 3986 does not allow is encoded,
/// valid escapes and everything else stay, and a second pass changes nothing.
@Suite struct URLNormalizationTests {
    static let cases: [(String, String)] = [
        ("http://h/a b.txt", "http://h/a%20b.txt"),
        ("http://h/caf\u{E9}/\u{1F600}", "http://h/caf%C3%A9/%F0%9F%98%80"),
        ("http://h/100%.txt", "http://h/100%25.txt"),
        ("http://h/%zz%4", "http://h/%25zz%254"),
        ("http://h/ok%20%2fkept", "http://h/ok%20%2fkept"),
        ("http://h/p?q=a b&r=\"x\"#frag ment#2", "http://h/p?q=a%20b&r=%22x%22#frag%20ment%232"),
        ("http://h/{a}|b^c`d<e>\\f", "http://h/%7Ba%7D%7Cb%5Ec%60d%3Ce%3E%5Cf"),
        ("  http://h/x\n", "http://h/x"),
        ("http://us er:p%@h/x", "http://us%20er:p%25@h/x"),
        ("http://b\u{FC}cher.example/x", "http://b\u{FC}cher.example/x"),
        ("HTTP://Host.Example:80/A?B#C", "HTTP://Host.Example:80/A?B#C"),
        ("http://h", "http://h"),
        ("http://h?a b", "http://h?a%20b"),
        ("not a url", "not a url"),
        ("ftp://h/a b", "ftp://h/a%20b"),
    ]

    @Test(arguments: cases) func encodesWhatMustBeEncoded(raw: String, expected: String) {
        #expect(URLNormalization.normalize(raw) == expected)
        #expect(URLNormalization.normalize(expected) == expected, "normalising twice changes nothing")
    }

    @Test func validURLsAreUnchangedByteForByte() {
        let valid = ["https://example.com/a/b.tar.gz?x=1&y=%2F#top", "http://[::1]:8080/p;q=1", "http://u:p@h/~x/!$&'()*+,;=:@"]
        for url in valid { #expect(URLNormalization.normalize(url) == url) }
    }

    @Test func referencesAreEncodedAsPaths() {
        #expect(URLNormalization.normalizeReference("a b/c%") == "a%20b/c%25")
        #expect(URLNormalization.normalizeReference("//h/x y") == "//h/x%20y")
        #expect(URLNormalization.normalizeReference("?q=\u{E9}#a#b") == "?q=%C3%A9#a%23b")
        #expect(URLNormalization.normalizeReference("http://h/ ") == "http://h/")
    }

    @Test func randomTextIsStableAfterOnePass() {
        var random = SplitMix64(seed: 18)
        let alphabet = Array("ab%2F /?#:@\u{E9}\"{}|\\^`<>\t".unicodeScalars)
        for _ in 0..<2000 {
            var text = "http://h/"
            for _ in 0..<Int(random.next() % 16) { text.unicodeScalars.append(alphabet[Int(random.next() % UInt64(alphabet.count))]) }
            let once = URLNormalization.normalize(text)
            #expect(URLNormalization.normalize(once) == once, "\(text)")
            #expect(once.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "\(once)")
        }
    }
}
