// libFuzzer target: RobotsRules (robots.txt parsing and matching). Build and run with scripts/fuzz.

/// Stops the fuzzer with `message` when `condition` is false.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

/// The path to match, up to the first newline; the rest is the robots.txt body.
@_cdecl("LLVMFuzzerTestOneInput")
public func robotsFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let newline = bytes.firstIndex(of: 0x0A) ?? bytes.count
    let path = "/" + String(decoding: bytes[..<newline], as: UTF8.self)
    let body = Array(bytes[min(bytes.count, newline + 1)...])
    let rules = RobotsRules(parsing: body)
    let verdict = rules.allows(path: path)
    require(verdict == RobotsRules(parsing: body).allows(path: path), "not deterministic for \(path.debugDescription)")
    require(rules.allows(path: "/robots.txt"), "/robots.txt refused")
    require(rules.crawlDelay.map { $0.isFinite && $0 >= 0 } ?? true, "crawl delay \(String(describing: rules.crawlDelay))")
    _ = RobotsRules(parsing: body, for: "other").allows(path: path)
    _ = rules.allows(url: "http://h" + path)
    return 0
}
