/// A load or handler failure, worded `file:line: message` for people.
public struct ScriptError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
    /// A usage error of the command line (exit 2 with its hint), not the script's.
    public private(set) var isUsage = false
    /// The static pass's problems, one "file:line: message" each, when that
    /// is what this error is: printed one per line, none indented.
    public private(set) var problems: [String] = []
    init(_ message: String) { self.message = message }
    init(problems: [String]) {
        message = problems.joined(separator: "\n")
        self.problems = problems
    }
    init(usage message: String) {
        self.message = message
        isUsage = true
    }
    init(_ error: LuaError) {
        message = error.kind == .runtime ? SandboxHint.annotate(error.message) : error.message
        if let traceback = error.traceback, !traceback.isEmpty { message += "\n" + traceback }
    }
}

/// A line a script wrote with `dl.log` or `dl.warn`.
public struct ScriptLine: Sendable {
    /// "job.lua:12", the script and line that wrote it.
    public var place: String
    /// The download whose handler wrote it (nil at the top level and in `done`).
    public var download: Int?
    public var text: String
    /// A notice of dlpipe's about the job rather than the script's own
    /// `dl.warn` (a limit the job set was met): shown as a warning, except
    /// that `-q` hides it unless it goes out as a `--json` event.
    public var isNotice = false

    /// `[job.lua:12 #3] text`, as dl.log prints it.
    public var formatted: String {
        download.map { "[\(place) #\($0)] \(text)" } ?? "[\(place)] \(text)"
    }
}
