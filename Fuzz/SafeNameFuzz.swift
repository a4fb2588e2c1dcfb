// libFuzzer target: SafeName.sanitize on arbitrary text, and the callers that feed it
// (URL last segments, SuggestedName, collision variants). Build and run with scripts/fuzz.

/// The input (repaired to valid UTF-8) as a raw name, a URL path, a header and a URL.
@_cdecl("LLVMFuzzerTestOneInput")
public func safeNameFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)

    let safe = SafeName.sanitize(text)
    checkSafeName(safe, from: text) { SafeName.sanitize(text) }
    for url in [text, "http://h/" + text] {
        checkSafeName(URLName.lastSegment(of: url).flatMap(SafeName.sanitize), from: url) {
            URLName.lastSegment(of: url).flatMap(SafeName.sanitize)
        }
    }
    let suggested = SuggestedName.make(contentDisposition: text, url: "https://h/" + text, contentType: nil)
    checkSafeName(suggested, from: text) {
        SuggestedName.make(contentDisposition: text, url: "https://h/" + text, contentType: nil)
    }
    if let safe {
        for index in [1, 10_000] {
            checkSafeName(CollisionName.variant(of: safe, index: index), from: safe) {
                CollisionName.variant(of: safe, index: index)
            }
        }
    }
    return 0
}
