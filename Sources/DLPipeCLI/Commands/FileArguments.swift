import DLPipe

/// How downloads become files: `--compressed`, file times from
/// Last-Modified (`--no-mtime`; curl's `-R`/`--remote-time` is accepted and
/// is the default, as in wget). Nil when not given, so a
/// job's `dl.config` fills them.
struct FileArguments {
    var compressed: Bool?
    var remoteTime: Bool?
    /// `--overwrite`: a new body replaces a file under its name instead of
    /// going beside it (`name.1.ext`).
    var overwrite: Bool?
    /// `--verify`: a kept file is hashed again before it is asked about.
    var verify: Bool?

    static func parse(_ args: inout Arguments) throws -> FileArguments {
        var parsed = FileArguments()
        if args.flag("--compressed") { parsed.compressed = true }
        let remote = args.flag("-R", "--remote-time")
        let noRemote = args.flag("--no-mtime", "--no-remote-time")
        if remote && noRemote {
            throw UsageError("-R/--remote-time and --no-mtime contradict each other", command: args.command)
        }
        if remote { parsed.remoteTime = true }
        if noRemote { parsed.remoteTime = false }
        if args.flag("--overwrite") { parsed.overwrite = true }
        if args.flag("--verify") { parsed.verify = true }
        return parsed
    }
}
