import DLPipe
import DLPipeLua
import Foundation

/// The options `run` and `get` share (SPEC 2). Values are nil when not given, so
/// a job's `dl.config` fills them and the command line wins.
struct RunOptions {
    var dir: String?
    var concurrency: Int?
    var perHost: Int?
    var retries: Int?
    var timeout: Double?
    /// curl's `-m/--max-time`, `-Y/--speed-limit`, `-y/--speed-time`.
    var maxTime: Double?
    var speedLimit: Int?
    var speedTime: Double?
    /// aria2's `--split`: connections per large file.
    var split: Int?
    var rate: Int?
    var json = false
    var quiet = false
    var progress = ProgressMode.auto
    var waitLock = false
    var state: String?
    var caFile: String?
    /// Proxy, TLS, host mapping, credentials (TransportArguments).
    var transport = TransportOptions()
    var maxRedirects: Int?
    var scripts = ScriptOptions()
    /// `get -o /folder/name`: the folder the file goes to (the engine's root);
    /// the state and the lock stay those of the output directory.
    var fileFolder: String?
    /// `get -o -`: the body goes to stdout through a staging folder; no state,
    /// no lock (nothing of the output directory is touched).
    var stdout: StdoutSink?
    /// `run --record DIR` / `run --replay DIR` (RecordReplay).
    var recorder: ResponseRecorder?
    var replay: ReplayServer?
    /// `--compressed`, `-R`/`--no-mtime` (FileArguments).
    var files = FileArguments()
    /// `--refresh conditional|never|always`: what a finished file of an earlier run gets.
    var refresh: RefreshPolicy?
    /// `-b/--cookie FILE` and `-c/--cookie-jar FILE` (curl's spelling).
    var cookieFile: String?
    var cookieJar: String?
    /// `--host-delay S`: seconds between requests to one host.
    var hostDelay: Double?
    /// `--web ADDR:PORT` and its token (WebArguments).
    var web: WebOptions?
    /// `--robots`: obey each host's robots.txt.
    var robots: Bool?

    /// Takes the shared options out of `args`, in this order (the first
    /// mistake is the one reported).
    static func parse(_ args: inout Arguments) throws -> RunOptions {
        var options = RunOptions()
        try options.takeTransferLimits(&args)
        options.json = args.flag("--json")
        options.waitLock = args.flag("--wait-lock")
        options.state = try StateOption.take(&args)
        try options.takeConnection(&args)
        options.scripts.statePath = options.state
        options.scripts.outputDirectory = options.dir
        try options.takeReporting(&args)
        try options.takeScripts(&args)
        options.files = try FileArguments.parse(&args)
        try options.takeRefresh(&args)
        options.web = try WebOptions.take(&args, environment: ProcessInfo.processInfo.environment)
        return options
    }

    /// The directory, how many transfers at once, retries, and the limits of time and speed.
    private mutating func takeTransferLimits(_ args: inout Arguments) throws {
        let command = args.command
        dir = try args.value("-d", "--dir")
        concurrency = try args.int("-j", "--concurrency", in: 1...1000)
        perHost = try args.int("--per-host", in: 1...1000)
        retries = try args.int("--retries", in: 0...100)
        split = try args.int("--split", in: 1...64)
        if let text = try args.value("--timeout") {
            guard let seconds = Double(text), seconds > 0, seconds <= 86400 else {
                throw UsageError("--timeout wants seconds above 0, not \(text.debugDescription)", command: command)
            }
            timeout = seconds
        }
        maxTime = try Self.seconds(&args, "-m", "--max-time")
        speedTime = try Self.seconds(&args, "-y", "--speed-time")
        if let text = try args.value("-Y", "--speed-limit") {
            guard let limit = ByteRate.parse(text) else {
                throw UsageError("--speed-limit wants bytes per second like 1000 or 10K, not \(text.debugDescription)", command: command)
            }
            speedLimit = limit
        }
        if let text = try args.value("--rate") {
            guard let rate = ByteRate.parse(text) else {
                throw UsageError("--rate wants bytes per second like 500K or 2M, not \(text.debugDescription)", command: command)
            }
            self.rate = rate
        }
    }

    /// The CA file, the transport's options (credentials, proxies, TLS), cookies and the delay per host.
    private mutating func takeConnection(_ args: inout Arguments) throws {
        let command = args.command
        if let caFile = try args.value("--cacert") {
            // Checked now: curl would only say so per transfer, once per download.
            guard FileManager.default.isReadableFile(atPath: caFile) else {
                throw UsageError("--cacert: cannot read \(caFile.debugDescription)", command: command)
            }
            self.caFile = caFile
        }
        try TransportArguments.parse(&args, into: &self)
        cookieFile = try args.value("-b", "--cookie")
        cookieJar = try args.value("-c", "--cookie-jar")
        if let jar = cookieJar, jar.contains("://") {
            // wget's -c (continue) before a URL: the URL became the jar's name.
            throw UsageError(
                "-c is curl's --cookie-jar FILE, and \(RedactedURL.text(jar).debugDescription) looks like a URL; "
                    + "to continue a download (wget's -c), run the same command again: dlpipe resumes by itself",
                command: command)
        }
        if let text = try args.value("--host-delay") {
            guard let seconds = Double(text), seconds >= 0, seconds <= 86400 else {
                throw UsageError("--host-delay wants seconds from 0 to 86400, not \(text.debugDescription)", command: command)
            }
            hostDelay = seconds
        }
        if args.flag("--robots") { robots = true }
    }

    /// How the run reports: `-q` and `--progress`.
    private mutating func takeReporting(_ args: inout Arguments) throws {
        let command = args.command
        quiet = args.flag("-q", "--quiet")
        let progressText = try args.value("--progress") ?? "auto"
        guard let progress = ProgressMode(rawValue: progressText) else {
            throw UsageError("--progress wants auto, bars, lines or none, not \(progressText.debugDescription)", command: command)
        }
        self.progress = progress
    }

    /// What scripts get: `--var`, `--allow-env`, and which hooks load.
    private mutating func takeScripts(_ args: inout Arguments) throws {
        let command = args.command
        for pair in try args.values("--var") {
            guard let eq = pair.firstIndex(of: "="), eq != pair.startIndex else {
                throw UsageError("--var wants NAME=VALUE, not \(pair.debugDescription)", command: command)
            }
            scripts.vars[String(pair[..<eq])] = String(pair[pair.index(after: eq)...])
        }
        for name in try args.values("--allow-env") {
            guard !name.isEmpty, !name.contains("="), !name.contains("\0") else {
                throw UsageError("--allow-env wants a variable name, not \(name.debugDescription)", command: command)
            }
            scripts.allowedEnvironment.append(name)
        }
        scripts.hookDirectories = try args.values("--hooks")
        scripts.hookFiles = try args.values("--hook")
        scripts.defaultHooks = !args.flag("--no-hooks")
        scripts.unsafe = args.flag("--unsafe-lua")
    }

    /// `--refresh`: when a finished download is asked for again.
    private mutating func takeRefresh(_ args: inout Arguments) throws {
        let command = args.command
        if let text = try args.value("--refresh") {
            guard let refresh = RefreshPolicy(rawValue: text) else {
                throw UsageError("--refresh wants conditional, never or always, not \(text.debugDescription)", command: command)
            }
            self.refresh = refresh
        }
    }

    /// Seconds above 0 (at most a day) of an option such as --max-time.
    private static func seconds(_ args: inout Arguments, _ names: String...) throws -> Double? {
        var found: [String] = []
        for name in names { found += try args.values(name) }
        guard let text = found.last else { return nil }
        guard let seconds = Double(text), seconds > 0, seconds <= 86400 else {
            throw UsageError("\(names.last!) wants seconds above 0, not \(text.debugDescription)", command: args.command)
        }
        return seconds
    }

    /// The engine's settings: defaults, then the job's `dl.config`, then the command line.
    func configuration(job: JobSettings?) -> EngineConfiguration {
        var config = EngineConfiguration()
        config.directory = dir ?? job?.dir ?? config.directory
        config.concurrency = concurrency ?? job?.concurrency ?? config.concurrency
        config.perHost = perHost ?? job?.perHost ?? config.perHost
        config.retries = retries ?? job?.retries ?? config.retries
        config.timeout = timeout ?? job?.timeout ?? config.timeout
        config.maxTime = maxTime ?? job?.maxTime
        config.speedLimit = speedLimit ?? job?.speedLimit
        config.speedTime = speedTime ?? job?.speedTime ?? config.speedTime
        config.split = split ?? job?.split ?? config.split
        config.rateLimit = rate ?? job?.rate
        config.endPausedWhenDrained = true
        config.sizeLimitName = "max_size"  // what jobs write in dl.add
        // Lua handlers have their own budget and backstop, and wait in one queue
        // behind each other: a per-call deadline would fail downloads of a busy
        // but healthy script.
        config.hookDeadline = nil
        config.recorder = recorder
        config.replay = replay
        config.transport = transport
        config.transport.proxy = transport.proxy ?? job?.proxy
        config.transport.noProxy = transport.noProxy ?? job?.noProxy
        config.transport.allowInsecureRedirects = transport.allowInsecureRedirects || job?.allowInsecureRedirects == true
        config.maxRedirects = maxRedirects ?? job?.maxRedirects ?? config.maxRedirects
        config.caFile = caFile
        if caFile == nil {
            // As curl: without --cacert, the bundle the environment names.
            let fromEnvironment = TransportArguments.caFromEnvironment(ProcessInfo.processInfo.environment)
            config.caFile = fromEnvironment.file
            config.transport.caPath = fromEnvironment.directory
        }
        config.keepsOutcomes = false  // output comes from events; a long queue stays small
        // A URL listed twice is fetched once, even when the first has ended.
        config.deduplicatesWholeRun = true
        config.statePath = state ?? StateLayout(directory: config.directory).database
        if let fileFolder { config.directory = fileFolder }
        if let stdout {
            config.directory = stdout.folder
            config.statePath = nil
        }
        config.refresh = refresh ?? job?.refresh.flatMap(RefreshPolicy.init(rawValue:)) ?? .conditional
        config.compressed = files.compressed ?? job?.compressed ?? false
        config.remoteTime = files.remoteTime ?? job?.remoteTime ?? true
        config.cookieFile = cookieFile ?? job?.cookie
        config.cookieJar = cookieJar ?? job?.cookieJar
        config.hostDelay = hostDelay ?? job?.hostDelay ?? 0
        config.robots = robots ?? job?.robots ?? false
        config.overwrite = files.overwrite ?? job?.overwrite ?? false
        config.verify = files.verify ?? job?.verify ?? false
        return config
    }

    /// Whether any Lua script is involved.
    var usesScripts: Bool { scripts.jobPath != nil || !scripts.hookFiles.isEmpty || !scripts.hookDirectories.isEmpty }
}
