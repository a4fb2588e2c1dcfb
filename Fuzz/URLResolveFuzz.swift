import Foundation

// libFuzzer target: URLTools (dl.url.resolve and dl.url.parse). Build and run with scripts/fuzz.

/// Stops the fuzzer with `message` when `condition` is false.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

/// Base and reference, split at the first newline; without one, the input is the reference
/// and the base a typical page URL.
@_cdecl("LLVMFuzzerTestOneInput")
public func urlResolveFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let halves = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
    let base = halves.count == 2 ? String(halves[0]) : "http://example.com/dir/page.html?q=1#top"
    let reference = String(halves.last ?? "")
    let context = "base \(base.debugDescription), reference \(reference.debugDescription)"

    _ = URLTools.parts(of: text)
    let resolved = URLTools.resolve(base: base, reference: reference)
    require(resolved == URLTools.resolve(base: base, reference: reference), "not deterministic: \(context)")
    let baseIsAbsolute = !(URL(string: base)?.scheme ?? "").isEmpty
    require(resolved == nil || baseIsAbsolute, "resolved against a relative base: \(context)")

    // An absolute http(s) reference stands alone (RFC 3986 §5.2.2): any absolute base
    // resolves it, and cannot change where it points.
    let trimmed = reference.trimmingCharacters(in: .whitespaces)
    if baseIsAbsolute, let absolute = URLTools.parts(of: trimmed), let host = absolute.host, !host.isEmpty,
       let scheme = absolute.scheme?.lowercased(), scheme == "http" || scheme == "https" {
        let result = resolved.flatMap { URLTools.parts(of: $0) }
        require(result?.scheme?.lowercased() == scheme && result?.host == host,
                "absolute reference gave \(resolved.debugDescription) (\(result.debugDescription)): \(context)")
    }

    guard let resolved else { return 0 }
    let again = URLTools.parts(of: resolved)
    require(URL(string: resolved) != nil && again != nil, "result \(resolved.debugDescription) does not parse again: \(context)")
    require(!(again?.scheme ?? "").isEmpty, "result \(resolved.debugDescription) has no scheme: \(context)")
    return 0
}
