// libFuzzer target: the Content-Disposition parser, through both entry points, and the
// sanitised name it leads to. Build and run with scripts/fuzz.

/// The header bytes through the byte entry point (UTF-8, else ISO-8859-1) and, repaired to
/// valid UTF-8, through the string one; both must agree on valid UTF-8 and sanitise safely.
@_cdecl("LLVMFuzzerTestOneInput")
public func contentDispositionFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let text = String(decoding: bytes, as: UTF8.self)

    let fromBytes = ContentDisposition.filename(fromBytes: bytes)
    let fromText = ContentDisposition.filename(from: text)
    require(fromBytes != "" && fromText != "", "empty raw filename instead of nil from \(text.debugDescription)")
    if Array(text.utf8) == bytes {
        require(fromBytes.map { Array($0.utf8) } == fromText.map { Array($0.utf8) },
                "byte and string entry points disagree on \(text.debugDescription)")
    }
    checkSafeName(fromBytes.flatMap(SafeName.sanitize), from: text) {
        ContentDisposition.filename(fromBytes: bytes).flatMap(SafeName.sanitize)
    }
    checkSafeName(fromText.flatMap(SafeName.sanitize), from: text) {
        ContentDisposition.filename(from: text).flatMap(SafeName.sanitize)
    }
    return 0
}
