/// The `dl` API's Lua side: prelude.lua (the friendly API over Swift's `__dl.*`
/// primitives) and api.lua (the table of every call and event that the
/// prelude's checks, the docs and the tests share), both compiled into the
/// binary by Package.swift's `embedInCode`.
enum Prelude {
    static var source: String { String(decoding: PackageResources.prelude_lua, as: UTF8.self) }
    static var api: String { String(decoding: PackageResources.api_lua, as: UTF8.self) }
    /// The generator of `dlpipe lua-defs` (LuaDefinitions).
    static var luaDefs: String { String(decoding: PackageResources.luadefs_lua, as: UTF8.self) }
    static let luaDefsChunkName = "=dlpipe/luadefs.lua"
    /// kit.lua: the Lua half of the script kit (dl.url.encode, dl.time.parse, dl.html.links, ...).
    static var kit: String { String(decoding: PackageResources.kit_lua, as: UTF8.self) }
    /// Chunk names: errors and traceback lines read "dlpipe/prelude.lua:N:".
    /// (The prelude tells its own frames from a script's by this prefix.)
    static let chunkName = "=dlpipe/prelude.lua"
    static let apiChunkName = "=dlpipe/api.lua"
    static let kitChunkName = "=dlpipe/kit.lua"
}
