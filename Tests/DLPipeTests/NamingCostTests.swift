import Foundation
import Testing

@testable import DLPipe

/// Issue 35: naming is linear and bounded on text with long runs of
/// combining marks, where Foundation's normaliser and `Character` walks are
/// quadratic (400,000 `a` + U+0301 pairs took 5 s in `SafeName.sanitize`).
@Suite struct NamingCostTests {
    private func seconds(_ work: () -> Void) -> Double {
        let started = Date()
        work()
        return Date().timeIntervalSince(started)
    }

    /// A million pairs, a letter with a million marks, and both behind a
    /// slash and before an extension: each well under a second's work (the
    /// bound is loose for a loaded machine; the quadratic code took minutes).
    @Test func decomposedTextIsNamedQuickly() {
        let pairs = String(repeating: "a\u{301}", count: 1_000_000)
        let marks = "a" + String(repeating: "\u{301}", count: 1_000_000)
        var names: [String?] = []
        let took = seconds {
            names.append(SafeName.sanitize(pairs + ".pdf"))
            names.append(SafeName.sanitize(marks))
            names.append(SafeName.sanitize("dir/" + marks + ".tar.gz"))
            names.append(SafeName.sanitize(String(repeating: " ", count: 1_000_000) + pairs))
            names.append(URLName.lastSegment(of: "http://h/" + String(repeating: "a%CC%81", count: 300_000)).flatMap(SafeName.sanitize))
        }
        #expect(took < 10, "\(took) s")
        // 123 "á" (NFC, 2 bytes each) and the extension: 250 bytes.
        #expect(names[0] == String(repeating: "\u{E1}", count: 123) + ".pdf")
        // One character too big for a name: cut between its scalars.
        #expect(names[1].map { Array($0.unicodeScalars.prefix(2)) } == ["\u{E1}", "\u{301}"])
        #expect(names[1]?.utf8.count == 250)
        #expect(names[2]?.hasSuffix(".gz") == true && names[2]!.utf8.count <= 250)
        // A million spaces first: trimmed away (what is left starts inside the pairs).
        #expect(names[3].map { $0.utf8.count >= 248 && $0.unicodeScalars.allSatisfy { $0 == "\u{E1}" || $0 == "\u{301}" } } == true)
        #expect(names[4] == String(repeating: "\u{E1}", count: 125))
    }

    /// Text longer than `maxCleanedBytes` keeps what a name can show: its
    /// start and its extension, cleaned as before.
    @Test func longTextKeepsItsStartAndItsExtension() {
        let middle = String(repeating: "\u{200B}x\u{202E}", count: 100_000)
        #expect(SafeName.sanitize("report " + middle + " final.pdf")?.hasPrefix("report xxx") == true)
        #expect(SafeName.sanitize("report " + middle + " final.pdf")?.hasSuffix("xx.pdf") == true)
        // A dot that carries a combining mark is no extension's dot.
        let name = String(repeating: "b", count: 300) + ".\u{301}pdf"
        #expect(SafeName.sanitize(name) == String(repeating: "b", count: 250))
    }

    /// NFC by the standard library, which composes where Foundation's left
    /// text unnormalised: a Hangul LV syllable and a trailing consonant.
    @Test func hangulSyllablesCompose() {
        #expect(SafeName.sanitize("\u{AC00}\u{11A8}.txt").map { Array($0.unicodeScalars) } == ["\u{AC01}", ".", "t", "x", "t"])
        #expect(SafeName.sanitize("Cafe\u{301}.txt") == "Caf\u{E9}.txt")
    }

    /// URLs past the limit are left as they are by the normaliser (no work
    /// on them) and refused with a short message; the limit itself passes.
    @Test func urlsPastTheLimitAreRefusedCheaply() {
        let long = "http://h/" + String(repeating: "a\u{301}", count: 1_000_000)
        var normal = ""
        let took = seconds { normal = URLNormalization.normalize(long) }
        #expect(took < 2 && normal == long)
        let problem = URLLimit.problem(long)
        #expect(problem?.hasPrefix("URL too long: 3000009 bytes, more than the 65536 dlpipe takes") == true)
        #expect((problem?.utf8.count ?? .max) < 250)
        let fits = "http://h/" + String(repeating: "x", count: URLLimit.maxBytes - 9)
        #expect(fits.utf8.count == URLLimit.maxBytes && URLLimit.problem(fits) == nil)
        #expect(URLLimit.problem(fits + "x") != nil)
        #expect(URLLimit.shown("http://h/é") == "http://h/é")
    }

    /// A name or path no file system takes is refused before any work on
    /// it, in a message that shows it shortened; the longest allowed pass.
    @Test func namesAndPathsPastTheirLimitsAreRefusedCheaply() throws {
        let huge = String(repeating: "a\u{301}", count: 1_000_000)
        for (directory, name) in [(nil, huge), ("d", huge), (huge, "x"), (nil, "d/" + String(repeating: "b", count: 256))] {
            let took = seconds {
                do throws(DownloadError) {
                    _ = try TargetPath.lexical(directory: directory, name: name)
                    Issue.record("accepted")
                } catch {
                    #expect(error.kind == .hook && error.message.contains("longer than the") && error.message.utf8.count < 300, "\(error.message.prefix(300))")
                }
            }
            #expect(took < 2)
        }
        let root = NSTemporaryDirectory()
        #expect(throws: DownloadError.self) { try TargetPath.resolve(root: root, directory: nil, name: huge) }
        #expect(throws: DownloadError.self) { try TargetPath.resolve(root: root, directory: nil, name: String(repeating: "c", count: 256)) }
        let longest = String(repeating: "c", count: 255)
        #expect(try TargetPath.lexical(directory: "d", name: longest) == TargetPath(directory: "d", name: longest))
        let deep = Array(repeating: String(repeating: "e", count: 200), count: 20).joined(separator: "/")  // 4,019 bytes
        #expect(try TargetPath.lexical(directory: deep, name: "f").directory == deep)
        #expect(throws: DownloadError.self) { try TargetPath.lexical(directory: deep + "/" + String(repeating: "g", count: 100), name: "f") }
    }
}
