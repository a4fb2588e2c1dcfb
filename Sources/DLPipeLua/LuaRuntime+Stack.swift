internal import CLua

// Moving values between Swift and the Lua stack. Nothing here may raise a Lua error: only
// raw accesses (no metamethods), keys checked before rawset, and the memory cap is off
// whenever Swift code runs, so allocations cannot be refused.
extension LuaRuntime {
    /// Pushes a Swift value. `.opaque`, and functions of another runtime, push nil; tables
    /// deeper than `LuaValue.maxDepth` push nil; nil and NaN keys are skipped.
    func push(_ value: LuaValue, on L: OpaquePointer, depth: Int = 0) {
        switch value {
        case .nil_, .opaque:
            lua_pushnil(L)
        case .boolean(let b):
            lua_pushboolean(L, b ? 1 : 0)
        case .integer(let i):
            lua_pushinteger(L, i)
        case .number(let d):
            lua_pushnumber(L, d)
        case .string(let bytes):
            bytes.withUnsafeBytes { buf in
                _ = lua_pushlstring(L, buf.baseAddress?.assumingMemoryBound(to: CChar.self), buf.count)
            }
        case .function(let f):
            if f.pool === pool {
                lua_rawgeti(L, dl_registryindex(), lua_Integer(f.ref))
            } else {
                lua_pushnil(L)
            }
        case .table(let table):
            guard depth < LuaValue.maxDepth, lua_checkstack(L, 3) != 0 else {
                lua_pushnil(L)
                return
            }
            var sequence = 0
            while table[.integer(Int64(sequence + 1))] != nil { sequence += 1 }
            lua_createtable(L, Int32(clamping: sequence), Int32(clamping: table.count - sequence))
            for (key, item) in table {
                push(key, on: L, depth: depth + 1)
                if !isUsableKey(on: L) {
                    dl_pop(L, 1)
                    continue
                }
                push(item, on: L, depth: depth + 1)
                lua_rawset(L, -3)
            }
        }
    }

    /// Whether the value on top can be a table key (rawset raises on nil and NaN).
    private func isUsableKey(on L: OpaquePointer) -> Bool {
        switch lua_type(L, -1) {
        case LUA_TNIL: return false
        case LUA_TNUMBER: return lua_isinteger(L, -1) != 0 || !dl_tonumber(L, -1).isNaN
        default: return true
        }
    }

    /// Converts the value at `index` (metamethods are not invoked; see `LuaValue.table`).
    func value(at index: Int32, on L: OpaquePointer) -> LuaValue {
        var seen = Set<UnsafeRawPointer>()
        return value(at: lua_absindex(L, index), on: L, depth: 0, seen: &seen)
    }

    /// The recursive conversion; `seen` holds every table already converted in this value.
    private func value(at index: Int32, on L: OpaquePointer, depth: Int, seen: inout Set<UnsafeRawPointer>) -> LuaValue {
        let type = lua_type(L, index)
        switch type {
        case LUA_TNIL, LUA_TNONE:
            return .nil_
        case LUA_TBOOLEAN:
            return .boolean(lua_toboolean(L, index) != 0)
        case LUA_TNUMBER:
            return lua_isinteger(L, index) != 0 ? .integer(dl_tointeger(L, index)) : .number(dl_tonumber(L, index))
        case LUA_TSTRING:
            return .string(bytes(at: index, on: L) ?? [])
        case LUA_TFUNCTION:
            lua_pushvalue(L, index)
            return .function(LuaFunctionRef(ref: luaL_ref(L, dl_registryindex()), pool: pool))
        case LUA_TTABLE:
            // Cycles and repeats are cut: a shared subtable converted once per occurrence
            // could blow up exponentially.
            guard depth < LuaValue.maxDepth, let identity = lua_topointer(L, index),
                seen.insert(identity).inserted, lua_checkstack(L, 3) != 0
            else { return .opaque("table") }
            var table: [LuaValue: LuaValue] = [:]
            lua_pushnil(L)
            while lua_next(L, index) != 0 {
                let top = lua_gettop(L)
                let key = value(at: top - 1, on: L, depth: depth + 1, seen: &seen)
                table[key] = value(at: top, on: L, depth: depth + 1, seen: &seen)
                dl_pop(L, 1)
            }
            return .table(table)
        default:
            return .opaque(String(cString: lua_typename(L, type)))
        }
    }

    /// The bytes of the string at `index`; nil if it is not a string (numbers are not converted,
    /// since lua_tolstring would change them in place and break lua_next).
    func bytes(at index: Int32, on L: OpaquePointer) -> [UInt8]? {
        guard lua_type(L, index) == LUA_TSTRING else { return nil }
        var length = 0
        guard let p = dl_tolstring(L, index, &length) else { return nil }
        return Array(UnsafeRawBufferPointer(start: p, count: length))
    }

    /// The string at `index` decoded as UTF-8 with replacement; nil if it is not a string.
    func string(at index: Int32, on L: OpaquePointer) -> String? {
        bytes(at: index, on: L).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Pushes a Swift string as a Lua string, its bytes as they are (NULs included).
    /// Reads the bytes where they are: a `var` copy for `withUTF8` cost a retain and a
    /// release of the string's storage per string, and event arguments are strings the
    /// engine thread made (their counts sit in another core's cache).
    static func pushString(_ text: String, on L: OpaquePointer) {
        let pushed: Void? = text.utf8.withContiguousStorageIfAvailable { bytes in
            _ = lua_pushlstring(L, UnsafeRawPointer(bytes.baseAddress)?.assumingMemoryBound(to: CChar.self), bytes.count)
        }
        guard pushed == nil else { return }
        var text = text  // not contiguous UTF-8 (a bridged string): made so
        text.withUTF8 { bytes in
            _ = lua_pushlstring(L, UnsafeRawPointer(bytes.baseAddress)?.assumingMemoryBound(to: CChar.self), bytes.count)
        }
    }

    /// The most table entries (nested ones included) the arguments of one call into Swift may
    /// hold. Converting them is Swift work that neither the time budget nor the memory cap
    /// can interrupt (500,000 entries took 15 s in `dl.store.set`), so larger arguments are
    /// refused before conversion, with an error at the caller's line.
    static let maxArgumentEntries = 100_000

    /// Runs the Swift function a trampoline stands for: converts the arguments, calls it with
    /// this thread as the current one, pushes the results or an error message (return -1).
    /// Why a call may not take its arguments into Swift: their copies (`cost` bytes per
    /// byte) would hold more than the memory cap leaves the state, after a full collection.
    /// (dl.url.parse of a 60 MB string once peaked at 581 MB against a cap of 256 MiB.)
    private func memoryRefusal(_ L: OpaquePointer, arguments count: Int32, cost: Int, name: String) -> String? {
        var bytes = 0
        for index in stride(from: 1, through: count, by: 1) { bytes += Int(dl_count_bytes(L, index, 0)) }
        let needed = bytes.multipliedReportingOverflow(by: cost)
        func left() -> Int { max(0, memoryLimit - memoryInUse) }
        guard needed.overflow || needed.partialValue > left() else { return nil }
        // Garbage (the temporaries that built the argument) counts until collected.
        dl_gc_collect(L)
        guard needed.overflow || needed.partialValue > left() else { return nil }
        func mib(_ bytes: Int) -> String { bytes >= 1 << 20 ? "\(bytes >> 20) MiB" : "\(bytes) bytes" }
        return "not enough memory: \(name) would take about \(needed.overflow ? "more than can be counted" : mib(needed.partialValue)) for its arguments of \(mib(bytes)), more than the script memory cap of \(Self.describe(bytes: memoryLimit)) leaves (\(mib(left())))"
    }

    func dispatch(_ L: OpaquePointer) -> Int32 {
        let id = Int(dl_tointeger(L, dl_upvalueindex(2)))
        guard functions.indices.contains(id) else {
            Self.pushString("unknown Swift function", on: L)
            return -1
        }
        let function = functions[id]
        let count = lua_gettop(L)
        var entries = 0
        for index in stride(from: 1, through: count, by: 1) {
            entries += dl_count_entries(L, index, Self.maxArgumentEntries - entries, 0)
            if entries > Self.maxArgumentEntries {
                Self.pushString("the arguments hold more than \(Self.maxArgumentEntries) table entries, the most a call into dlpipe takes", on: L)
                return -1
            }
        }
        if let refusal = memoryRefusal(L, arguments: count, cost: functionCosts[id], name: functionNames[id]) {
            Self.pushString(refusal, on: L)
            return -1
        }
        let arguments = count > 0 ? (1...count).map { value(at: $0, on: L) } : []
        activeThreads.append(L)
        // The backstop may read L's stack while this runs (LuaCallMonitor): no Lua API use
        // between enterSwift and leaveSwift but the function's own calls back into Lua.
        let outer = monitor.enterSwift(L, name: functionNames[id])
        let outcome = Result { () throws(LuaCallError) in try function(arguments) }
        monitor.leaveSwift(outer)
        activeThreads.removeLast()
        switch outcome {
        case .failure(let error):
            Self.pushString(error.message, on: L)
            return -1
        case .success(let results):
            guard results.count < 1_000_000, lua_checkstack(L, Int32(results.count) + 1) != 0 else {
                Self.pushString("too many results from a Swift function", on: L)
                return -1
            }
            for result in results { push(result, on: L) }
            return Int32(results.count)
        }
    }
}
