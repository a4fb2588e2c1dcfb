/// The static pass over a script's source (lint.lua): unknown `dl.*` names,
/// calls a handler may not make and literals it may not return, found before
/// the script runs. `dlpipe check` and `run` both load scripts through
/// `ScriptHost.load`, which runs it after the compiler and before the top
/// level, so both refuse the same job with the same message (exit 2).
public enum ScriptLint {
    static var source: String { String(decoding: PackageResources.lint_lua, as: UTF8.self) }
    static let chunkName = "=dlpipe/lint.lua"

    /// lint.lua's module ({ scan, return_problem }) in `runtime`, given api.lua's table.
    static func module(in runtime: LuaRuntime, api: LuaValue) throws(LuaError) -> LuaValue {
        let chunk = try runtime.load(Array(source.utf8), chunkName: chunkName, sharedEnvironment: true)
        return try runtime.call(chunk, [api], budget: 10).first ?? .nil_
    }

    /// The problems of `source`, each "name:line: message", found by `scan` (lint.lua's) in `runtime`.
    static func problems(
        scan: LuaFunctionRef, in runtime: LuaRuntime, source: [UInt8], displayName: String, isJob: Bool
    ) throws(ScriptError) -> [String] {
        let result: [LuaValue]
        do throws(LuaError) {
            // A scan is linear in the source; the top level's budget bounds it all the same.
            result = try runtime.call(scan, [.string(source), .boolean(isJob)], budget: ScriptHost.topLevelBudget)
        } catch {
            throw ScriptError("internal error in lint.lua: \(error.message)")
        }
        return (result.first?.array ?? []).compactMap { problem -> String? in
            guard let line = problem["line"]?.int, let message = problem["message"]?.text else { return nil }
            return "\(displayName):\(line): \(message)"
        }
    }

    /// The problems of one script in a Lua state of its own (tests, tools).
    public static func problems(in source: [UInt8], displayName: String, isJob: Bool) throws(ScriptError) -> [String] {
        let runtime = LuaRuntime(memoryLimit: 64 << 20, unsafe: false)
        let lint: LuaValue
        do throws(LuaError) {
            let api = try runtime.run(Prelude.api, chunkName: Prelude.apiChunkName)
            lint = try module(in: runtime, api: api.first ?? .nil_)
        } catch {
            throw ScriptError("internal error in lint.lua: \(error.message)")
        }
        guard case .function(let scan)? = lint["scan"] else { throw ScriptError("internal error: lint.lua has no scan") }
        return try problems(scan: scan, in: runtime, source: source, displayName: displayName, isJob: isJob)
    }
}
