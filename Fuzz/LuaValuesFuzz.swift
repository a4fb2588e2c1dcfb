@testable import DLPipe
import Foundation

@testable import DLPipeLua

// libFuzzer target: random Lua values (huge, negative, NaN, infinities, fractions, the
// integer extremes, strings, tables, booleans) into every dl.config key and dl.add field,
// through the real prelude, the way a job's top level passes them, and into dl.retry and
// dl.add from a failed handler. Nothing may trap (a trap is the crash libFuzzer records),
// and what the prelude takes must be what Swift takes: every dl.config call that returned
// gives settings JobSettings reads, and every accepted number is inside its range. Build
// and run with scripts/fuzz (this target links the package's own debug build; see
// docs/fuzzing.md).

/// Stops the fuzzer with `message` when `condition` is false.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

/// A number's range, as api.lua writes it next to its key.
struct Range {
    var low: Double
    var high: Double?
    var above: Bool

    func contains(_ x: Double) -> Bool {
        (above ? x > low : x >= low) && x <= (high ?? Double(Int64.max))
    }
}

/// The keys to feed and their ranges ("config.retries", "add.priority"), from the API
/// table itself: a key added to api.lua is fuzzed too.
let api: (config: [String], add: [String], ranges: [String: Range], retry: Range) = {
    let runtime = LuaRuntime(memoryLimit: 16 << 20, unsafe: false)
    let api = (try? runtime.run(Prelude.api, chunkName: Prelude.apiChunkName))?.first ?? .nil_
    let order = api["defs"]?["order"]
    let config = (order?["config"]?.array ?? []).compactMap(\.text)
    let add = (order?["add"]?.array ?? []).compactMap(\.text).filter { $0 != "url" }
    require(!config.isEmpty && !add.isEmpty, "api.lua has no defs.order.config or add")
    var ranges: [String: Range] = [:]
    for (section, keys) in [("config", config), ("add", add)] {
        for key in keys {
            guard case .table(let range)? = api["defs"]?["fields"]?[section]?[key]?["range"] else { continue }
            ranges[section + "." + key] = Range(
                low: range[.integer(1)]?.double ?? 0, high: range[.integer(2)]?.double,
                above: range[LuaValue("above")]?.bool == true)
        }
    }
    require(ranges.count >= 10, "api.lua has too few ranges: \(ranges.keys.sorted())")
    guard case .table(let retry)? = api["defs"]?["calls"]?["dl.retry"]?["params"]?[1]?["range"] else {
        fatalError("api.lua has no range for dl.retry's seconds")
    }
    return (config, add, ranges, Range(low: retry[.integer(1)]?.double ?? 0, high: retry[.integer(2)]?.double, above: false))
}()

/// Reads the fuzzer's bytes as choices.
struct Choices {
    var bytes: [UInt8]
    var at = 0
    var isEmpty: Bool { at >= bytes.count }

    mutating func byte() -> UInt8 {
        defer { at += 1 }
        return at < bytes.count ? bytes[at] : 0
    }

    mutating func word() -> UInt64 {
        var value: UInt64 = 0
        for _ in 0..<8 { value = value << 8 | UInt64(byte()) }
        return value
    }

    /// A Lua value, mostly numbers near the edges that once trapped.
    mutating func value(depth: Int = 0) -> LuaValue {
        let special: [Double] = [1e300, -1e300, .nan, -.nan, .infinity, -.infinity, 0x1p63, -0x1p63, 0x1p53, 0, -0.0,
                                 0.5, 1.5, -1, 86_400, 86_400.5, 1e-300, .leastNonzeroMagnitude, .greatestFiniteMagnitude]
        switch byte() % 12 {
        case 0: return .number(special[Int(byte()) % special.count])
        case 1: return .number(Double(bitPattern: word()))
        case 2: return .integer(Int64(bitPattern: word()))
        case 3: return .integer([Int64.min, Int64.max, -1, 0, 1, 1000, 1001, 1_000_000_000, 1_000_000_001][Int(byte()) % 9])
        case 4: return .integer(Int64(Int8(bitPattern: byte())))
        case 5: return .number(Double(Int16(bitPattern: UInt16(byte()) << 8 | UInt16(byte()))) / 4)
        case 6:
            let words = ["", "7", "500K", "1e300K", "nan", "-1", "2M", "conditional", "GET", "memory", "http://h/y",
                         "postgresql://h/db", "9999999999999999999G"]
            return LuaValue(words[Int(byte()) % words.count])
        case 7: return .boolean(byte() & 1 == 1)
        case 8 where depth < 2: return .array([value(depth: depth + 1), value(depth: depth + 1)])
        case 9: return .number(Double(Int32(bitPattern: UInt32(truncatingIfNeeded: word()))) * 1e9)
        case 10: return .integer(Int64(bitPattern: word()) >> (byte() % 64))
        default: return .number(Double(byte()) - 128.5)
        }
    }
}

/// One Lua state for many inputs (made anew every 500): making one runs the prelude, most
/// of an input's time in the package's debug build. Each input's calls stand alone (a value
/// set by dl.config replaces the last one), and only its own adds are checked.
nonisolated(unsafe) var shared: (host: ScriptHost, inputs: Int)?

/// A failed handler, for the numbers handlers pass: dl.retry's delay, or a dl.add field
/// (a drop-in hook's handler runs the same prelude code).
let handler = """
    dl.on("failed", function(d, e)
      if __fz.retry then return dl.retry(__fz.v) end
      dl.add{ url = "http://h/from-handler/" .. __fz.n, [__fz.k] = __fz.v }
    end)
    """

/// Dispatches a failed event to `handler`; checks that a delay it took is in dl.retry's range
/// and that a refusal is an error at the handler's line. Returns whether an add was taken.
func failedEvent(_ host: ScriptHost, retry: Bool) -> Bool {
    let info = DownloadInfo(id: DownloadID(1), url: "http://h/x", name: "x", directory: "", path: "/x", parent: nil,
                            attempt: 1, meta: [:])
    let outcome = host.dispatch("failed", download: info, argument: .failure(
        DownloadError(.http, "gone", status: 503), attempt: 1, retryAfter: nil))
    if let error = outcome.error {
        require(error.message.hasPrefix("job.lua:"), "a handler's refusal not at its line: \(error.message)")
        return false
    }
    if retry {
        let delay = outcome.extra.double ?? .nan
        require(outcome.verdict == "retry" && api.retry.contains(delay), "dl.retry took \(outcome.extra)")
        return false
    }
    return true
}

@_cdecl("LLVMFuzzerTestOneInput")
public func luaValuesFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var choices = Choices(bytes: Array(UnsafeBufferPointer(start: data, count: size)))
    if shared == nil || shared!.inputs >= 500 {
        guard let host = try? ScriptHost(unsafe: false, memoryLimit: 64 << 20, budget: 2, vars: [:], log: { _ in }),
            (try? host.runtime.run(handler, chunkName: "=job.lua")) != nil
        else {
            fatalError("the prelude or the handler failed to load")
        }
        shared = (host, 0)
    }
    shared!.inputs += 1
    let host = shared!.host
    let runtime = host.runtime
    let addedBefore = host.topLevel?.count ?? 0
    var adds = 0
    var calls = 0
    while !choices.isEmpty && calls < 16 {
        calls += 1
        // One call in eight from a handler (dl.retry, or dl.add): a dispatch costs more.
        let kind = choices.byte()
        if kind % 8 == 7 {
            let retry = kind & 8 == 0
            runtime.setGlobal("__fz.retry", .boolean(retry))
            runtime.setGlobal("__fz.n", .integer(Int64(calls)))
            runtime.setGlobal("__fz.k", LuaValue(api.add[Int(choices.byte()) % api.add.count]))
            runtime.setGlobal("__fz.v", choices.value())
            if failedEvent(host, retry: retry) { adds += 1 }
            continue
        }
        let toConfig = kind & 1 == 0
        let key = toConfig ? api.config[Int(choices.byte()) % api.config.count] : api.add[Int(choices.byte()) % api.add.count]
        runtime.setGlobal("__fz.v", choices.value())
        // Sometimes two fields at once: the checks must not depend on the order of pairs().
        let second = toConfig ? nil : api.add[Int(choices.byte()) % api.add.count]
        if second != nil { runtime.setGlobal("__fz.w", choices.value()) }
        let source = toConfig
            ? "dl.config{ [\"\(key)\"] = __fz.v }"
            : "dl.add{ url = 'http://h/\(calls)', [\"\(key)\"] = __fz.v\(second.map { ", [\"\($0)\"] = __fz.w" } ?? "") }"
        var message: String?
        do { try runtime.run(source, chunkName: "=job.lua") } catch { message = error.message }
        if !toConfig && message == nil { adds += 1 }
        // A refusal is an error of the script's line, never of the prelude's.
        if let message {
            require(message.hasPrefix("job.lua:1:"), "\(source) with \(runtime.getGlobal("__fz.v")): \(message)")
        }
    }
    // What every dl.config call that returned put in the table, Swift reads without an error.
    let table: [String: LuaValue]
    do { table = try host.config() } catch { fatalError("host.config: \(error.message)") }
    // (A refusal by Swift of what the prelude took would be a load error without a line.)
    do { _ = try JobSettings(table) } catch { fatalError("JobSettings refused what dl.config took: \(error.message) in \(table)") }
    for (key, value) in table {
        guard let range = api.ranges["config." + key], let x = value.double else { continue }
        require(range.contains(x), "dl.config took \(key) = \(value), outside its range")
    }
    // Every accepted add's numbers are inside their ranges (the engine converts them to Int).
    if adds > 0, let requests = host.topLevel?.requests() {
        for request in requests.dropFirst(addedBefore) {
            if let range = api.ranges["add.priority"] {
                require(range.contains(Double(request.priority)), "dl.add took priority \(request.priority)")
            }
            if let timeout = request.timeout, let range = api.ranges["add.timeout"] {
                require(range.contains(timeout), "dl.add took timeout \(timeout)")
            }
            if let size = request.maxSize, let range = api.ranges["add.max_size"] {
                require(range.contains(Double(size)), "dl.add took max_size \(size)")
            }
        }
    }
    return 0
}
