import DLPipeLua

/// `dlpipe lua-defs`: prints the LuaLS definition file of the `dl` API, for
/// editors (`dlpipe lua-defs > dl.d.lua`).
enum LuaDefsCommand {
    static func run(_ raw: [String]) throws -> Int32 {
        var args = Arguments(raw, command: "lua-defs")
        if args.flag("-h", "--help") {
            print(HelpText.luaDefs, terminator: "")
            return ExitCode.ok
        }
        let positionals = try args.positionals()
        guard positionals.isEmpty else { throw UsageError("lua-defs takes no arguments", command: "lua-defs") }
        do {
            print(try LuaDefinitions.text(), terminator: "")
        } catch {
            Terminal.error("dlpipe: \(error.message)")
            return ExitCode.failed
        }
        return ExitCode.ok
    }
}
