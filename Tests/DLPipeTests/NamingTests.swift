import Foundation
import Testing
import TestSupport
@testable import DLPipe

/// UTF-8 bytes, because Swift's `==` on String ignores normalisation differences we must see.
private func utf8(_ s: String?) -> [UInt8]? { s.map { Array($0.utf8) } }

/// The first broken SafeName guarantee for a produced name (or non-determinism of `make`), or nil.
private func problem(_ name: String?, _ make: () -> String?) -> String? {
    guard let name else { return nil }
    if utf8(make()) != utf8(name) { return "not deterministic: \(name.debugDescription)" }
    // The clean-name rules by Unicode property (CleanName), and SafeName's own
    // list too, so that a gap in either shows.
    if let problem = CleanName.problem(name) { return problem }
    if let kept = name.unicodeScalars.first(where: SafeName.isRemoved) {
        return "removed U+\(String(kept.value, radix: 16)) kept in \(name.debugDescription)"
    }
    if name.utf8.count > SafeName.maxBytes { return "\(name.utf8.count) bytes" }
    if utf8(SafeName.sanitize(name)) != utf8(name) { return "not idempotent: \(name.debugDescription)" }
    return nil
}

/// Content-Disposition header value → expected sanitised file name.
private let headerTable: [(String, String?)] = [
    ("attachment; filename=\"report.pdf\"", "report.pdf"),
    ("attachment; filename=report.pdf", "report.pdf"),
    ("attachment; FILENAME=Report.PDF", "Report.PDF"),
    ("ATTACHMENT; FileName*=UTF-8''Mixed.txt", "Mixed.txt"),
    ("attachment; filename=\"../../etc/passwd\"", "passwd"),
    // A backslash in a quoted-string escapes the next character (RFC 9110 quoted-pair), so an
    // unescaped Windows path is one name without separators; a doubled backslash is a real one.
    ("attachment; filename=\"..\\..\\windows\\system32\\cmd.exe\"", "windowssystem32cmd.exe"),
    ("attachment; filename=\"..\\\\..\\\\windows\\\\system32\\\\cmd.exe\"", "cmd.exe"),
    ("attachment; filename=\"f\\oo.html\"", "foo.html"),
    ("attachment; filename=\"foo-%\\41.html\"", "foo-%41.html"),
    ("attachment; filename=\"\\.\\.\\/etc\\/passwd\"", "passwd"),
    ("attachment; filename=/etc/shadow", "shadow"),
    ("attachment; filename=\"C:\\x\\y.txt\"", "C:xy.txt"),
    ("attachment; filename=\"C:\\\\x\\\\y.txt\"", "y.txt"),
    ("attachment; filename*=UTF-8''..%2F..%2Fetc%2Fpasswd", "passwd"),
    ("attachment; filename*=UTF-8''..%5C..%5Cboot.ini", "boot.ini"),
    ("attachment; filename=%2e%2e%2fetc%2fpasswd", "%2e%2e%2fetc%2fpasswd"),  // filename= is not decoded
    ("attachment; filename*=UTF-8''%E2%82%AC%20rates.txt", "\u{20AC} rates.txt"),
    ("attachment; filename*=iso-8859-1'en'%A3%20rates.txt", "\u{A3} rates.txt"),
    ("attachment; filename=\"fallback.txt\"; filename*=UTF-8''pr%C3%A9f.txt", "pr\u{E9}f.txt"),
    ("attachment; filename*=UTF-8''pr%C3%A9f.txt; filename=\"fallback.txt\"", "pr\u{E9}f.txt"),
    ("attachment; filename*=UTF-8''bad%ZZ.txt; filename=\"good.txt\"", "good.txt"),
    ("attachment; filename*=UTF-8''cut%4; filename=good.txt", "good.txt"),
    ("attachment; filename*=KOI8-R''%C1.txt; filename=plain.txt", "plain.txt"),
    ("attachment; filename*=UTF-8''%FF.txt; filename=ok.txt", "ok.txt"),
    ("attachment; filename*=no-quotes.txt; filename=ok.txt", "ok.txt"),
    ("attachment; filename*=\"UTF-8''quoted%20ext.txt\"", "quoted ext.txt"),
    ("attachment; filename=\"say \\\"hi\\\".txt\"", "say \"hi\".txt"),
    ("attachment; filename=my file name.txt ; size=3", "my file name.txt"),
    ("inline; filename = \"spaced.txt\" junk; x=1", "spaced.txt"),
    ("attachment; filename=\"unterminated.txt", "unterminated.txt"),
    ("attachment; filename=\"a\u{0}b.txt\"", "ab.txt"),
    ("attachment; filename=\"\u{1B}[31mred.txt\"", "[31mred.txt"),
    ("attachment; filename=\"line\r\nbreak\u{85}.txt\"", "linebreak.txt"),
    ("attachment; filename*=UTF-8''%00%01x%7F.bin", "x.bin"),
    ("attachment; filename=\".bashrc\"", "bashrc"),
    ("attachment; filename=...x", "x"),
    ("attachment; filename=\". .\u{200B}.hidden\"", "hidden"),
    ("attachment; filename=\"  spaced.txt. . \"", "spaced.txt"),
    ("attachment; filename=\"\u{202E}gpj.exe\"", "gpj.exe"),
    ("attachment; filename=\"inv\u{200B}oice\u{FEFF}\u{2066}.pdf\u{2069}\"", "invoice.pdf"),
    ("attachment; filename=\"re\u{AD}port.pdf\"", "report.pdf"),  // soft hyphen (found by fuzzing)
    ("attachment; filename=\"a\u{2064}b\u{E0041}\u{E007F}.txt\"", "ab.txt"),  // invisible plus, tag characters
    ("attachment; filename=\"cafe\u{301}.txt\"", "caf\u{E9}.txt"),
    ("attachment; filename*=UTF-8''cafe%CC%81.txt", "caf\u{E9}.txt"),
    ("attachment; filename=\".\"", nil), ("attachment; filename=\"..\"", nil),
    ("attachment; filename=\"...\"", nil), ("attachment; filename*=UTF-8''%2e%2e", nil),
    ("attachment; filename=\"\"", nil), ("", nil), (";;;", nil), ("attachment", nil),
    ("attachment; filename=\"a/\"", nil), ("attachment; filename=\"\u{202E}\u{200B}\"", nil),
    ("=;=\"\\;filename", nil), ("filename", nil), ("\"\"\";;==\\", nil), ("filename*=''", nil),
]

/// URL → expected sanitised name from its last segment.
private let urlTable: [(String, String?)] = [
    ("http://h/a/b.txt?x=1", "b.txt"), ("https://example.com/dir/", nil), ("http://h", nil),
    ("http://h?file=x.txt", nil), ("http://h#x/y.txt", nil), ("http://h/a#frag/b.txt", "a"),
    ("http://h/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "passwd"), ("http://h/..%2F..%2Fsecret.txt", "secret.txt"),
    ("http://h/..%5Cwin.ini", "win.ini"), ("http://h/%E2%82%AC.txt", "\u{20AC}.txt"),
    ("http://h/%E9t%E9.txt", "\u{E9}t\u{E9}.txt"), ("http://h/file%00name.txt", "filename.txt"),
    ("http://h/%1b%5b31mx.txt", "[31mx.txt"), ("http://h/a/..", nil), ("http://h/.", nil),
    ("http://h/.hidden", "hidden"), ("HTTPS://H/Upper.ZIP", "Upper.ZIP"), ("http://h/bad%zz%.txt", "bad%zz%.txt"),
    ("http://h\\a\\b.txt", "b.txt"), ("not a url", nil), ("", nil), ("http://", nil), ("://x/y", nil),
    ("http://user@h:8080/p/q.tar.gz?x#y", "q.tar.gz"), ("http://h/%E2%80%AEgpj.exe", "gpj.exe"),
    ("http://h/cafe%CC%81.txt", "caf\u{E9}.txt"), ("ftp://h/pub/f.iso", "f.iso"), ("http://h/%", "%"),
    ("http://h/re%ADport.pdf", "report.pdf"), ("http://h/re%C2%ADport.pdf", "report.pdf"),  // soft hyphen
]

/// Fragments that exercise the parsers' edge cases, mixed with arbitrary scalars.
private let pieces = ["a", "Z", ".", "..", "/", "\\", ";", "=", "\"", "'", "%", "%2F", "%2e", "%C3%A9", "%FF", "%0",
                      " ", "\t", "filename=", "filename*=", "FILENAME*=UTF-8''", "iso-8859-1''", "\u{0}", "\u{1B}[31m",
                      "\u{7F}", "\u{85}", "\u{202E}", "\u{200B}", "\u{FEFF}", "e\u{301}", "\u{E9}",
                      "\u{1F468}\u{200D}\u{1F469}", "\u{301}", "\u{2028}", "\u{3000}", "\u{AD}", "\u{E0041}", ".tar.gz",
                      String(repeating: "\u{E9}", count: 90), "a" + String(repeating: "\u{301}", count: 150)]

/// A random string of up to 30 fragments or scalars (mostly low code points, sometimes any).
private func randomString(_ rng: inout SplitMix64) -> String {
    var view = String.UnicodeScalarView()
    for _ in 0..<Int.random(in: 0...30, using: &rng) {
        if Bool.random(using: &rng) {
            view.append(contentsOf: pieces.randomElement(using: &rng)!.unicodeScalars)
            continue
        }
        let top: UInt32 = rng.next() % 4 == 0 ? 0x10FFFF : 0x7FF
        if let scalar = Unicode.Scalar(UInt32.random(in: 0...top, using: &rng)) { view.append(scalar) }
    }
    return String(view)
}

/// Tests for the naming rules: header parsing, URL names, sanitising and collisions.
struct NamingTests {
    /// Each header yields exactly the expected safe name (or nil) and keeps every invariant.
    @Test(arguments: headerTable)
    func contentDispositionCases(header: String, expected: String?) {
        let make = { ContentDisposition.filename(from: header).flatMap(SafeName.sanitize) }
        let name = make()
        #expect(utf8(name) == utf8(expected), "\(header.debugDescription) → \(name.debugDescription)")
        #expect(problem(name, make) == nil)
    }

    /// The parser's raw output is unsanitised, and header bytes fall back to ISO-8859-1.
    @Test func contentDispositionRawValues() {
        #expect(ContentDisposition.filename(from: "attachment; filename*=UTF-8''..%2F..%2Fetc") == "../../etc")
        #expect(ContentDisposition.filename(from: "attachment; filename=\"a\\\\b\"") == "a\\b")
        // Unescaped before anything else: the escaped backslash is the only separator left.
        #expect(ContentDisposition.filename(from: "attachment; filename=\"\\a\\\\b\\c\"") == "a\\bc")
        #expect(ContentDisposition.filename(fromBytes: Array("attachment; filename=\"\u{E9}.txt\"".utf8)) == "\u{E9}.txt")
        #expect(ContentDisposition.filename(fromBytes: Array("attachment; filename=\"".utf8) + [0xE9, 0x22]) == "\u{E9}")
        #expect(ContentDisposition.filename(fromBytes: []) == nil)
        // Byte 0xAD of a Latin-1 header is a soft hyphen, which must not reach the disk (found by fuzzing).
        let latin1 = ContentDisposition.filename(fromBytes: Array("attachment; filename=\"re".utf8) + [0xAD] + Array("port.pdf\"".utf8))
        #expect(latin1 == "re\u{AD}port.pdf" && latin1.flatMap(SafeName.sanitize) == "report.pdf")
    }

    /// NFD and NFC spellings of a name end up as the same bytes on disk.
    @Test func normalisationVariantsGiveSameBytes() {
        let nfd = SafeName.sanitize("Cafe\u{301} re\u{301}sume\u{301}.txt")
        let nfc = SafeName.sanitize("Caf\u{E9} r\u{E9}sum\u{E9}.txt")
        #expect(nfd != nil && utf8(nfd) == utf8(nfc))
    }

    /// Each URL's last segment yields exactly the expected safe name (or nil).
    @Test(arguments: urlTable)
    func urlCases(url: String, expected: String?) {
        let make = { URLName.lastSegment(of: url).flatMap(SafeName.sanitize) }
        let name = make()
        #expect(utf8(name) == utf8(expected), "\(url.debugDescription) → \(name.debugDescription)")
        #expect(problem(name, make) == nil)
    }

    /// Over-long names are cut to 255 bytes at a character boundary, keeping a short extension.
    @Test func longNamesKeepExtension() throws {
        let ascii = try #require(SafeName.sanitize(String(repeating: "a", count: 396) + ".pdf"))
        let limit = SafeName.maxBytes  // 255 per the product spec
        #expect(ascii.utf8.count == limit && ascii.hasSuffix(".pdf"))
        let accented = try #require(SafeName.sanitize(String(repeating: "e\u{301}", count: 200) + ".txt"))
        #expect(limit - 1...limit ~= accented.utf8.count && accented.hasSuffix(".txt"))  // two-byte é
        let longExt = try #require(SafeName.sanitize(String(repeating: "a", count: 300) + ".bbbbbbbbbbbbbbbbbbbb"))
        #expect(longExt == String(repeating: "a", count: limit))
        let zalgo = try #require(SafeName.sanitize("a" + String(repeating: "\u{301}", count: 300) + ".txt"))
        #expect(zalgo.utf8.count <= limit && zalgo.hasSuffix(".txt") && zalgo.unicodeScalars.count > 4)
        let spaces = try #require(SafeName.sanitize("x" + String(repeating: " ", count: 300) + "y"))
        #expect(spaces == "x")  // the cut leaves trailing spaces, which are trimmed again
        for name in [ascii, accented, longExt, zalgo, spaces] { #expect(problem(name, { name }) == nil) }
    }

    /// Header first, then URL, then index.html for directories or HTML, else download.
    @Test func suggestedNames() {
        let make = { SuggestedName.make(contentDisposition: $0, url: $1, contentType: $2) }
        let html = "text/html; charset=utf-8"
        #expect(make(nil, "http://h/", nil) == "index.html")
        #expect(make(nil, "http://h", nil) == "index.html")
        #expect(make(nil, "http://h/a/..", html) == "index.html")
        #expect(make(nil, "http://h/a/..", " Text/HTML") == "index.html")
        #expect(make(nil, "http://h/a/..", nil) == "download")
        #expect(make(nil, "http://h/%00", "text/plain") == "download")
        #expect(make("attachment; filename=x.pdf", "http://h/y.bin", html) == "x.pdf")
        #expect(make("attachment; filename=..", "http://h/y.bin", nil) == "y.bin")
        #expect(make("inline", "http://h/page.php?id=1", html) == "page.php")
        #expect(make("attachment; filename*=UTF-8''%E2%80%AE%2F", "http://h/", nil) == "index.html")
    }

    /// After redirects: the requested URL names the file, the final one only
    /// when the requested has no last segment; Content-Disposition still wins.
    @Test func suggestedNamesAfterARedirect() {
        let make = { SuggestedName.make(contentDisposition: $0, url: $1, finalURL: $2, contentType: "text/html") }
        #expect(make(nil, "http://h/hop/ss", "http://g/") == "ss")
        #expect(make(nil, "http://h/latest/app.tgz", "http://g/files/app-1.2.tgz") == "app.tgz")
        #expect(make(nil, "http://h/download/", "http://g/files/app-1.2.tgz") == "app-1.2.tgz")
        #expect(make(nil, "http://h/download/", "http://g/") == "index.html")
        #expect(make("attachment; filename=report.pdf", "http://h/hop/ss", "http://g/x") == "report.pdf")
    }

    /// Numbered variants go before the (compound) extension and respect the byte limit.
    @Test func collisionVariants() {
        let cases = [("report.pdf", 1, "report.1.pdf"), ("archive.tar.gz", 1, "archive.1.tar.gz"),
                     ("A.TAR.BZ2", 2, "A.2.TAR.BZ2"), ("x.tar.xz", 3, "x.3.tar.xz"), ("x.tar.zst", 4, "x.4.tar.zst"),
                     ("x.tar.lz", 5, "x.5.tar.lz"), ("README", 1, "README.1"), ("Mr. Smith", 1, "Mr. Smith.1"),
                     ("a.b.c", 7, "a.b.7.c"), ("tar.gz", 1, "tar.1.gz"), ("x.tgz", 12, "x.12.tgz")]
        for (name, index, expected) in cases { #expect(CollisionName.variant(of: name, index: index) == expected) }
        let long = CollisionName.variant(of: String(repeating: "\u{E9}", count: 125) + ".pdf", index: 12)
        #expect(long.utf8.count <= SafeName.maxBytes && long.hasSuffix("\u{E9}.12.pdf"))
    }

    /// firstFree probes bare names in order, from a given number on, and never
    /// runs out of numbers: it answers a free name however many are taken.
    @Test func collisionFirstFree() {
        let taken: Set = ["report.pdf", "report.1.pdf", "report.3.pdf"]
        #expect(CollisionName.firstFree(for: "report.pdf", isTaken: taken.contains) == "report.2.pdf")
        #expect(CollisionName.firstFree(for: "new.pdf", isTaken: taken.contains) == "new.pdf")
        var seen: [String] = []  // isTaken gets bare names, in order
        _ = CollisionName.firstFree(for: "a.tar.gz") { seen.append($0); return seen.count < 3 }
        #expect(seen == ["a.tar.gz", "a.1.tar.gz", "a.2.tar.gz"])
        seen = []  // from a number on: the name itself, then that number
        let found = CollisionName.firstFreeNumbered(for: "a.bin", from: 7) { seen.append($0); return seen.count < 3 }
        #expect(seen == ["a.bin", "a.7.bin", "a.8.bin"] && found == ("a.8.bin", 8))
        var calls = 0  // the name and 20,000 numbered variants are taken: the next number is free
        let past = CollisionName.firstFree(for: "r.pdf", isTaken: { _ in calls += 1; return calls <= 20_001 })
        #expect(calls == 20_002 && past == "r.20001.pdf")
        // Which number a variant has: only variants of that name count.
        #expect(CollisionName.index(of: "r.20001.pdf", asVariantOf: "r.pdf") == 20_001)
        #expect(CollisionName.index(of: "a.2.tar.gz", asVariantOf: "a.tar.gz") == 2)
        #expect(CollisionName.index(of: "README.3", asVariantOf: "README") == 3)
        for (candidate, name) in [("r.pdf", "r.pdf"), ("r.x.pdf", "r.pdf"), ("q.1.pdf", "r.pdf"), ("r.01.pdf", "r.pdf"),
                                  ("r.1.txt", "r.pdf"), ("r.1.pdf.1", "r.pdf"), (".1.pdf", "r.pdf")] {
            #expect(CollisionName.index(of: candidate, asVariantOf: name) == nil, "\(candidate) of \(name)")
        }
    }

    /// 5,000 seeded random inputs through every entry point: no crash, invariants hold.
    @Test func randomInputsKeepInvariants() {
        let seed = ProcessInfo.processInfo.environment["DLPIPE_NAMING_SEED"].flatMap { UInt64($0) } ?? 0x5EED_D1F1
        var rng = SplitMix64(seed: seed)
        var failures: [String] = []
        for _ in 0..<5_000 {
            let s = randomString(&rng)
            let bytes = (0..<Int.random(in: 0...60, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let makers: [() -> String?] = [
                { SafeName.sanitize(s) },
                { ContentDisposition.filename(from: s).flatMap(SafeName.sanitize) },
                { ContentDisposition.filename(from: "attachment; filename=" + s).flatMap(SafeName.sanitize) },
                { ContentDisposition.filename(from: "attachment; filename*=UTF-8''" + s).flatMap(SafeName.sanitize) },
                { ContentDisposition.filename(fromBytes: Array("inline; filename=\"".utf8) + bytes)
                    .flatMap(SafeName.sanitize) },
                { URLName.lastSegment(of: "http://h/" + s).flatMap(SafeName.sanitize) },
                { URLName.lastSegment(of: s).flatMap(SafeName.sanitize) },
                { SuggestedName.make(contentDisposition: s, url: "https://h/" + s, contentType: nil) },
                { SafeName.sanitize(s).map { CollisionName.variant(of: $0, index: 10_000) } },
            ]
            for make in makers {
                if let failure = problem(make(), make) { failures.append("\(failure) from \(s.debugDescription)") }
            }
        }
        #expect(failures.isEmpty, "seed \(seed) (set DLPIPE_NAMING_SEED to replay): \(failures.prefix(5))")
    }

    /// The shortcut for plain ASCII names answers what the full path would: for
    /// random printable ASCII (dots, spaces and slashes made likely), a name the
    /// shortcut takes as it is comes out of the full path unchanged too.
    @Test func plainASCIIShortcutAgreesWithTheFullPath() {
        var rng = SplitMix64(seed: 42)
        var taken = 0
        let alphabet = Array("ab.. //\\x-_~0!".utf8) + Array(0x20...0x7E)
        for _ in 0..<20_000 {
            let count = Int(rng.next() % 12)
            let name = String(decoding: (0..<count).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }, as: UTF8.self)
            if SafeName.isPlainASCII(name) {
                taken += 1
                #expect(SafeName.sanitizeFully(name) == name, "\(name.debugDescription)")
            } else {
                #expect(SafeName.sanitize(name) == SafeName.sanitizeFully(name))
            }
        }
        #expect(taken > 1000, "the shortcut is taken for most plain names")
        #expect(!SafeName.isPlainASCII(String(repeating: "a", count: SafeName.maxBytes + 1)))
    }
}
