internal import CLua
import DLPipe

/// An event's second handler argument (SPEC 1.2), pushed straight onto the Lua
/// stack as a table: no `LuaValue` dictionaries are built and hashed per event.
enum EventArgument {
    case response(ResponseInfo)
    case progress(ProgressInfo)
    case finished(FinishedInfo)
    /// `failed` and `retrying`: `retryAfter` is the server's Retry-After for
    /// `failed`, and the delay before the retry for `retrying`.
    case failure(DownloadError, attempt: Int, retryAfter: Double?)
    case summary(RunSummary)
    /// `request`: the hop's URL, the attempt and the headers the handler changes in place.
    case request(RequestInfo)

    func push(on L: OpaquePointer) {
        switch self {
        case .response(let r):
            let t = LuaFieldWriter(L, fields: 7)
            t.set("status", r.status)
            t.set("headers", strings: r.headers, lists: r.setCookies.isEmpty ? [:] : ["set-cookie": r.setCookies])
            t.set("type", r.type)
            t.set("length", r.length)
            t.set("filename", r.filename)
            t.set("url", r.url)
            t.set("resumed_from", r.resumedFrom)
        case .progress(let p):
            let t = LuaFieldWriter(L, fields: 5)
            t.set("bytes", p.bytes)
            t.set("total", p.total)
            t.set("fraction", p.fraction)
            t.set("rate", p.rate)
            t.set("eta", p.eta)
        case .finished(let f):
            let t = LuaFieldWriter(L, fields: 8)
            // A memory download has no path; its body is the string `f.body`,
            // allocated by Lua's allocator like every string (the memory cap's).
            if f.body == nil { t.set("path", f.path) }
            t.set("body", bytes: f.body)
            t.set("bytes", f.bytes)
            t.set("sha256", f.sha256)
            t.set("type", f.type)
            t.set("seconds", f.seconds)
            t.set("unchanged", f.unchanged)
            t.set("headers", strings: f.headers, lists: f.headers["set-cookie"] == nil ? [:] : ["set-cookie": f.setCookies])
        case .failure(let e, let attempt, let retryAfter):
            let t = LuaFieldWriter(L, fields: 5)
            t.set("kind", e.kind.rawValue)
            t.set("message", e.message)
            t.set("status", e.status)
            t.set("attempt", attempt)
            t.set("retry_after", retryAfter)
        case .summary(let s):
            let t = LuaFieldWriter(L, fields: 10)
            t.set("finished", s.finished)
            t.set("failed", s.failed)
            t.set("handled", s.handled)
            t.set("skipped", s.skipped)
            t.set("unchanged", s.unchanged)
            t.set("verified", s.verified)
            t.set("replaced", s.replaced)
            t.set("cancelled", s.cancelled)
            t.set("bytes", s.bytes)
            t.set("seconds", s.seconds)
        case .request(let q):
            let t = LuaFieldWriter(L, fields: 3)
            t.set("url", q.url)
            t.set("attempt", q.attempt)
            t.set("headers", strings: q.headers)
        }
    }

    /// What `host.begin` and `host.once` take: the event's name, the download
    /// (nil for `done`) and the event's argument. `ids` gives the ids the
    /// scripts know (a shared queue's top-level adds keep their provisional ids).
    static func push(_ event: String, _ download: DownloadInfo?, _ argument: EventArgument, ids: ProvisionalIDs,
                     on L: OpaquePointer) {
        LuaRuntime.pushString(event, on: L)
        push(download, ids: ids, on: L)
        argument.push(on: L)
    }

    /// The download's fields as the prelude's `d` proxy reads them; nil for `done`.
    static func push(_ d: DownloadInfo?, ids: ProvisionalIDs, on L: OpaquePointer) {
        guard let d else { return lua_pushnil(L) }
        let t = LuaFieldWriter(L, fields: 8)
        t.set("id", ids.shown(d.id.rawValue))
        t.set("url", d.url)
        t.set("name", d.name)
        t.set("dir", d.directory)
        t.set("path", d.path)
        t.set("parent", d.parent.map { ids.shown($0.rawValue) })
        t.set("attempt", d.attempt)
        // The meta the add gave, as JSON: read when this Lua state did not make
        // the add (a shared queue's worker runs downloads other workers added).
        t.set("meta_json", d.metaJSON)
        // Likewise the depth (the prelude's own table has the adds it made).
        if d.depth > 0 { t.set("depth", d.depth) }
    }
}

/// Creates a table on top of the stack and sets its fields; nil values are left out.
/// Called from Swift with the memory cap off, on a fresh table without metatable.
struct LuaFieldWriter {
    private let L: OpaquePointer

    init(_ L: OpaquePointer, fields: Int) {
        self.L = L
        lua_createtable(L, 0, Int32(fields))
    }

    func set(_ key: StaticString, _ value: String?) {
        guard let value else { return }
        set(key, value)
    }

    /// A string that is always there: passed as it is, since wrapping it in an
    /// Optional for the setter above retained it (and released it) once more.
    func set(_ key: StaticString, _ value: String) {
        LuaRuntime.pushString(value, on: L)
        setField(key)
    }

    func set(_ key: StaticString, bytes: [UInt8]?) {
        guard let bytes else { return }
        bytes.withUnsafeBytes { raw in
            _ = lua_pushlstring(L, raw.baseAddress?.assumingMemoryBound(to: CChar.self), raw.count)
        }
        setField(key)
    }

    func set<T: BinaryInteger>(_ key: StaticString, _ value: T?) {
        guard let value else { return }
        lua_pushinteger(L, lua_Integer(clamping: value))
        setField(key)
    }

    func set(_ key: StaticString, _ value: Double?) {
        guard let value else { return }
        lua_pushnumber(L, value)
        setField(key)
    }

    func set(_ key: StaticString, _ value: Bool) {
        lua_pushboolean(L, value ? 1 : 0)
        setField(key)
    }

    func set(_ key: StaticString, strings: [String: String]) {
        lua_createtable(L, 0, Int32(clamping: strings.count))
        for (name, value) in strings {
            LuaRuntime.pushString(name, on: L)
            LuaRuntime.pushString(value, on: L)
            lua_rawset(L, -3)
        }
        setField(key)
    }

    /// A table of headers where the names in `lists` are sequences of values
    /// (`set-cookie`), not one string.
    func set(_ key: StaticString, strings: [String: String], lists: [String: [String]]) {
        lua_createtable(L, 0, Int32(clamping: strings.count))
        for (name, value) in strings {
            LuaRuntime.pushString(name, on: L)
            if let list = lists[name] {
                lua_createtable(L, Int32(clamping: list.count), 0)
                for (index, item) in list.enumerated() {
                    LuaRuntime.pushString(item, on: L)
                    lua_rawseti(L, -2, lua_Integer(index + 1))
                }
            } else {
                LuaRuntime.pushString(value, on: L)
            }
            lua_rawset(L, -3)
        }
        setField(key)
    }

    private func setField(_ key: StaticString) {
        UnsafeRawPointer(key.utf8Start).withMemoryRebound(to: CChar.self, capacity: key.utf8CodeUnitCount + 1) {
            lua_setfield(L, -2, $0)
        }
    }
}
