import Foundation
import Testing
import TestSupport

@testable import DLPipeLua

/// URL fragments that reach the resolver's edge cases, mixed with arbitrary scalars.
private let pieces = ["http://", "https://", "HTTP://", "file:///", "mailto:", "x:", ":", "//", "/", "\\", "h",
                      "example.com", "[::1]", "u:p@", ":8080", ":99999", "\u{E9}.com", "a", "..", ".", "../", "./",
                      "?", "#", "@", "%", "%2F", "%2e", "%zz", " ", "\t", "\n", "\u{0}", "\u{202E}", "+", "-"]

/// A random string of up to 12 fragments or scalars (mostly ASCII, sometimes any).
private func randomURLText(_ rng: inout SplitMix64) -> String {
    var view = String.UnicodeScalarView()
    for _ in 0..<Int.random(in: 0...12, using: &rng) {
        if rng.next() % 4 != 0 {
            view.append(contentsOf: pieces.randomElement(using: &rng)!.unicodeScalars)
            continue
        }
        let top: UInt32 = rng.next() % 4 == 0 ? 0x10FFFF : 0x7F
        if let scalar = Unicode.Scalar(UInt32.random(in: 0...top, using: &rng)) { view.append(scalar) }
    }
    return String(view)
}

/// True when Foundation sees a non-empty scheme (it reports "" for ":x").
private func isAbsolute(_ text: String) -> Bool { !(URL(string: text)?.scheme ?? "").isEmpty }

/// The first broken promise of `URLTools.resolve(base:reference:)`, or nil.
private func problem(base: String, reference: String) -> String? {
    let resolved = URLTools.resolve(base: base, reference: reference)
    if resolved != URLTools.resolve(base: base, reference: reference) { return "not deterministic" }
    if resolved != nil, !isAbsolute(base) { return "resolved against a relative base" }
    let absolute = URLTools.parts(of: reference.trimmingCharacters(in: .whitespaces))
    if isAbsolute(base), let host = absolute?.host, !host.isEmpty,
       let scheme = absolute?.scheme?.lowercased(), scheme == "http" || scheme == "https" {
        let result = resolved.flatMap { URLTools.parts(of: $0) }
        if result?.scheme?.lowercased() != scheme || result?.host != host {
            return "absolute reference gave \(resolved.debugDescription)"
        }
    }
    guard let resolved else { return nil }
    if URLTools.parts(of: resolved) == nil || !isAbsolute(resolved) { return "\(resolved.debugDescription) is not an absolute URL" }
    return nil
}

/// Properties of dl.url.resolve and dl.url.parse, the same ones Fuzz/URLResolveFuzz.swift checks.
@Suite struct URLToolsPropertyTests {
    /// Known answers, including the inputs fuzzing found.
    @Test func resolveCases() {
        let cases: [(String, String, String?)] = [
            ("http://h/a/b.html", "../c.png", "http://h/c.png"),
            ("http://h/a/b", "../../../../x", "http://h/x"),
            ("https://h/dir/", "//other/p?q#f", "https://other/p?q#f"),
            ("file:///a", "http://x/y", "http://x/y"),
            ("http://h/", " http://x/ ", "http://x/"),
            ("+", ".", nil),  // relative base: Foundation resolved it to "" (found by fuzzing)
            ("a b", "http://x/y", nil),  // relative base, even for an absolute reference
            ("http://h/d/p", " :", nil),  // empty scheme: Foundation returned ":" (found by fuzzing)
            (":x", "y", nil),
            ("", "http://x/", nil),
            // No authority in the base, and the dots fold the path to "//...": the
            // result read again would have an authority, or not parse (found by fuzzing).
            ("s:", ".///t+\u{FFFD}:\n//.", nil),
        ]
        for (base, reference, expected) in cases {
            let resolved = URLTools.resolve(base: base, reference: reference)
            #expect(resolved == expected, "\(base.debugDescription) + \(reference.debugDescription) → \(resolved.debugDescription)")
            #expect(problem(base: base, reference: reference) == nil)
        }
    }

    /// 3,000 seeded random base/reference pairs: no crash, every property holds.
    @Test func randomInputsKeepProperties() {
        let seed = ProcessInfo.processInfo.environment["DLPIPE_URL_SEED"].flatMap { UInt64($0) } ?? 0x0E1_5EED
        var rng = SplitMix64(seed: seed)
        var failures: [String] = []
        for _ in 0..<3_000 {
            // Half the bases are real absolute URLs, so that the references get resolved.
            let base = Bool.random(using: &rng) ? "http://h/d/" + randomURLText(&rng) : randomURLText(&rng)
            let reference = randomURLText(&rng)
            _ = URLTools.parse(reference)
            if let failure = problem(base: base, reference: reference) {
                failures.append("\(failure): base \(base.debugDescription), reference \(reference.debugDescription)")
            }
        }
        #expect(failures.isEmpty, "seed \(seed) (set DLPIPE_URL_SEED to replay): \(failures.prefix(5))")
    }
}
