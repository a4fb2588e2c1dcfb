import DLPipeLua
import Testing

/// Loads `source` as a chunk of its own, calls it under `budget` and returns
/// its results (throws the LuaError).
public func eval(_ rt: LuaRuntime, _ source: String, name: String = "test.lua", budget: Double = 5) throws(LuaError)
    -> [LuaValue]
{
    try rt.call(rt.load(Array(source.utf8), chunkName: name), [], budget: budget)
}

/// Runs `source` expecting a LuaError and returns it; records an issue and
/// returns nil when it succeeds.
public func failure(_ rt: LuaRuntime, _ source: String, name: String = "test.lua", budget: Double = 5) -> LuaError? {
    do {
        let results = try eval(rt, source, name: name, budget: budget)
        Issue.record("expected an error, got \(results)")
        return nil
    } catch {
        return error
    }
}
