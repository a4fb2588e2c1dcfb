import DLPipe
import DLPipeQueue

/// Settings a job gave with `dl.config`, already checked.
public struct JobSettings: Sendable {
    public var dir: String?
    public var concurrency: Int?
    public var perHost: Int?
    public var retries: Int?
    public var timeout: Double?
    /// `max_time`, `speed_limit`, `speed_time` (curl's -m, -Y, -y).
    public var maxTime: Double?
    public var speedLimit: Int?
    public var speedTime: Double?
    /// `split`: connections per large file (aria2's `--split`).
    public var split: Int?
    public var rate: Int?
    public var refresh: String?
    public var budget: Double?
    public var maxDownloads: Int?
    public var proxy: String?
    public var noProxy: String?
    public var maxRedirects: Int?
    public var allowInsecureRedirects: Bool?
    /// `compressed` (`--compressed`) and `mtime` (false: `--no-mtime`).
    public var compressed: Bool?
    public var remoteTime: Bool?
    /// `dl.config{ cookie = FILE, cookie_jar = FILE }` (as `-b` and `-c`).
    public var cookie: String?
    public var cookieJar: String?
    /// `dl.config{ max_depth = N }` (the prelude applies it; checked here).
    public var maxDepth: Int?
    /// `dl.config{ host_delay = S }` (as `--host-delay`).
    public var hostDelay: Double?
    /// `overwrite` (`--overwrite`).
    public var overwrite: Bool?
    /// `verify` (`--verify`).
    public var verify: Bool?
    /// `robots` (`--robots`): obey each host's robots.txt.
    public var robots: Bool?
    /// `queue`: the shared queue's PostgreSQL address (`--queue`), checked
    /// as an address at load; whether it answers is the command line's business.
    public var queue: String?
    /// `max_done`: the most times `done` fires in a run (ScriptHost applies it).
    public var maxDone: Int?
    /// `env`: the names the job's own `os.getenv` may read (the prelude applies it).
    public var environment: [String]?
}

extension JobSettings {
    /// Reads and checks `dl.config`'s table (the prelude already refused unknown keys,
    /// and numbers outside the ranges api.lua writes next to each key; Swift reads
    /// those ranges from api.lua too (APIRanges), so that no value, however it came,
    /// traps a conversion). Every key of api.lua's config is read here, into a
    /// property of its own: APITableTests fails on one that is not.
    init(_ table: [String: LuaValue]) throws(ScriptError) {
        func range(_ key: String) throws(ScriptError) -> APIRange {
            guard let range = APIRanges.config[key] else { throw ScriptError("internal error: api.lua gives dl.config's \(key) no range") }
            return range
        }
        func whole(_ key: String) throws(ScriptError) -> Int? {
            guard let value = table[key] else { return nil }
            let range = try range(key)
            // `int` is exact (nil for a fraction, NaN, an infinity or 1e300), and the
            // range is checked on Int64 before any conversion.
            guard let number = value.int, range.contains(number) else {
                throw ScriptError("dl.config: \(key) wants \(range.text)")
            }
            return Int(number)
        }
        func seconds(_ key: String) throws(ScriptError) -> Double? {
            guard let value = table[key] else { return nil }
            let range = try range(key)
            guard let number = value.double, range.contains(number) else {
                throw ScriptError("dl.config: \(key) wants \(range.text)")
            }
            return number
        }
        // Bytes per second: a whole number, or text such as "500K" (ByteRate).
        func byteRate(_ key: String, like examples: String) throws(ScriptError) -> Int? {
            guard let value = table[key] else { return nil }
            let range = try range(key)
            guard let rate = value.int ?? value.text.flatMap(ByteRate.parse).map(Int64.init), range.contains(rate) else {
                throw ScriptError("dl.config: \(key) wants bytes per second from \(Int64(range.low)) to \(Int64(range.high ?? 0)), like \(examples)")
            }
            return Int(rate)
        }
        dir = table["dir"]?.text
        concurrency = try whole("concurrency")
        perHost = try whole("per_host")
        retries = try whole("retries")
        timeout = try seconds("timeout")
        maxTime = try seconds("max_time")
        speedTime = try seconds("speed_time")
        split = try whole("split")
        speedLimit = try byteRate("speed_limit", like: "1000, \"1K\" or \"1M\"")
        budget = try seconds("budget")
        maxDownloads = try whole("max_downloads")
        maxRedirects = try whole("max_redirs")
        proxy = table["proxy"]?.text
        noProxy = table["noproxy"]?.text
        allowInsecureRedirects = table["allow_insecure_redirects"]?.bool
        compressed = table["compressed"]?.bool
        remoteTime = table["mtime"]?.bool
        cookie = table["cookie"]?.text
        cookieJar = table["cookie_jar"]?.text
        maxDepth = try whole("max_depth")
        maxDone = try whole("max_done")
        hostDelay = try seconds("host_delay")
        overwrite = table["overwrite"]?.bool
        verify = table["verify"]?.bool
        robots = table["robots"]?.bool
        rate = try byteRate("rate", like: "500000, \"500K\" or \"2M\"")
        if let value = table["refresh"]?.text {
            guard ["conditional", "never", "always"].contains(value) else {
                throw ScriptError("dl.config: refresh wants \"conditional\", \"never\" or \"always\"")
            }
            refresh = value
        }
        if let value = table["queue"]?.text {
            do throws(PostgresError) {
                queue = try PostgresAddress(value).text
            } catch {
                throw ScriptError("dl.config: queue: \(error.message)")
            }
        }
        environment = table["env"].map { ($0.array ?? []).compactMap(\.text) }
    }
}
