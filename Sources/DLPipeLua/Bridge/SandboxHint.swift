/// A hint for an error that comes from something the sandbox took away
/// (`io`, `require`, `os.remove`...): Lua's own message says only "a nil
/// value", which reads like a bug of the script. The globals themselves stay
/// nil (a metatable that raised on them would break `if io then`), so the
/// hint is added where the error is reported, from Lua's wording of it.
enum SandboxHint {
    /// What replaces each global the sandbox removed.
    static let globals: [String: String] = [
        "io": "the sandbox has no io library: dl.read(path) reads a file of the output directory, dl.write(path, data) and dl.append(path, line) write one there, dl.store keeps values between runs, dl.log and dl.warn print",
        "require": "the sandbox loads no modules: put shared code in a drop-in hook (hooks.d/*.lua), which shares dl with the job",
        "dofile": "the sandbox runs no other files: put shared code in a drop-in hook (hooks.d/*.lua), or load(dl.read(path)) a file of the output directory",
        "loadfile": "the sandbox runs no other files: put shared code in a drop-in hook (hooks.d/*.lua), or load(dl.read(path)) a file of the output directory",
        "debug": "the sandbox has no debug library",
        "package": "the sandbox has no package library: put shared code in a drop-in hook (hooks.d/*.lua)",
    ]

    /// The os functions the sandbox removed (it keeps time, clock, date and getenv).
    static let osFields: [String: String] = [
        "remove": "dl.remove(path) removes a download's file or one this job wrote, in the output directory",
        "rename": "the sandbox moves no files itself: a finished handler moves a download by setting d.name / d.dir",
        "execute": "the sandbox starts no process",
        "exit": "a handler cannot end the process: a done handler returns the exit code",
        "tmpname": "the sandbox makes no temporary files",
        "difftime": "subtract the two os.time() values",
        "setlocale": "the sandbox keeps the C locale",
    ]

    static let unsafe = "(--unsafe-lua gives the full standard library)"

    /// `message` with a hint appended when it is Lua's error about a removed
    /// global (`(global 'io')`) or a removed os function (`(field 'remove')`,
    /// which Lua words without the table's name).
    static func annotate(_ message: String) -> String {
        guard message.contains("a nil value (") else { return message }
        if let name = quoted(in: message, after: "(global '"), let hint = globals[name] {
            return "\(message): \(hint) \(unsafe)"
        }
        if let name = quoted(in: message, after: "(field '"), let hint = osFields[name] {
            return "\(message): if this is os.\(name), \(hint) \(unsafe)"
        }
        return message
    }

    private static func quoted(in message: String, after marker: String) -> String? {
        guard let start = message.range(of: marker)?.upperBound,
            let end = message[start...].firstIndex(of: "'")
        else { return nil }
        return String(message[start..<end])
    }
}
