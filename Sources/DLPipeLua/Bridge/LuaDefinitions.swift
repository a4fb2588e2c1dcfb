/// `dlpipe lua-defs`: the LuaLS definition file of the `dl` API, made by
/// luadefs.lua from api.lua in a Lua state of its own.
public enum LuaDefinitions {
    /// The file's text, ending in a newline.
    public static func text() throws(ScriptError) -> String {
        let runtime = LuaRuntime(memoryLimit: 64 << 20, unsafe: false)
        let result: [LuaValue]
        do throws(LuaError) {
            let api = try runtime.run(Prelude.api, chunkName: Prelude.apiChunkName)
            let generator = try runtime.load(Array(Prelude.luaDefs.utf8), chunkName: Prelude.luaDefsChunkName)
            result = try runtime.call(generator, [api.first ?? .nil_], budget: 10)
        } catch {
            throw ScriptError("internal error in luadefs.lua: \(error.message)")
        }
        guard let text = result.first?.text else { throw ScriptError("internal error: luadefs.lua returned no text") }
        return text + "\n"
    }
}
