import DLPipe
import DLPipeLua
import Foundation

/// `dlpipe get URL... [options]`: ad-hoc downloads through the engine.
enum GetCommand {
    static func run(_ raw: [String]) async throws -> Int32 {
        var args = Arguments(raw, command: "get")
        if args.flag("-h", "--help") {
            print(HelpText.get, terminator: "")
            return ExitCode.ok
        }
        let spellings = try CurlSpellings.take(&args, raw: raw)
        var inputs = try args.values("-i", "--input")
        let output = try args.value("-o", "--output")
        let sha256 = try args.value("--sha256")
        var headers: [String: String] = [:]
        for line in try args.secretValues("-H", "--header", secret: ArgvSecret.credentialHeader) {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw UsageError("-H wants \"Name: value\", not \(line.debugDescription)", command: "get")
            }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if let problem = HeaderField.problem(name: name, value: value) {
                throw UsageError("-H: \(problem)", command: "get")
            }
            headers[name] = value
        }
        var options = try RunOptions.parse(&args)
        if spellings.silent { options.quiet = true }
        // `get -`: the URL list on stdin, as `-i -` (the usage line's "- for stdin").
        var positionals = try args.positionals()
        if positionals.contains("-") {
            positionals.removeAll { $0 == "-" }
            if !inputs.contains("-") { inputs.append("-") }
        }
        let urls = try URLStream(urls: positionals, lists: inputs)
        let first = urls.peek(2)
        guard !first.isEmpty else { throw UsageError("no URL given", command: "get") }
        if first.count > 1 && (output != nil || sha256 != nil) {
            throw UsageError("-o and --sha256 apply to one URL only; got more than one URL", command: "get")
        }
        if let sha256, sha256.count != 64 || !sha256.allSatisfy(\.isHexDigit) {
            throw UsageError("--sha256 wants 64 hex digits", command: "get")
        }
        let target = try output.map(OutputTarget.parse)
        switch target {
        case .stdout?:
            if options.json { throw UsageError("-o - writes the body to stdout, where --json would write events; use one", command: "get") }
            options.stdout = try StdoutSink()
        case .path(let folder, _)?:
            options.fileFolder = folder
        case .name?, nil:
            break
        }
        let request: (name: String?, directory: String?) = target?.request ?? (output, nil)
        // Every way out of here, a usage error included, removes `-o -`'s staging
        // folder (a signal's way out does it in RunDriver's stop).
        let stdout = options.stdout
        defer { stdout?.discard() }

        var session: ScriptSession?
        if options.usesScripts {
            guard let loaded = RunDriver.loadScripts(options.scripts, quiet: options.quiet, json: options.json) else { return ExitCode.usage }
            session = loaded
        }
        if let target, target != .stdout {
            let settings = options.configuration(job: session?.settings)
            try target.checkNoClobber(url: DefaultScheme.applied(to: first[0]), folder: options.fileFolder ?? settings.directory, statePath: settings.statePath ?? "",
                overwrite: settings.overwrite)
        }
        let status = await RunDriver.run(
            options: options, session: session,
            requests: urls.lazy.map {
                DownloadRequest(
                    url: DefaultScheme.applied(to: $0), name: request.name, directory: request.directory, headers: headers, sha256: sha256)
            })
        if let failure = urls.failure {
            // The URLs before the failure ran; the ones after it were never read.
            Terminal.error("dlpipe: \(failure); the URLs after that point were not queued")
            return status == ExitCode.ok ? ExitCode.failed : status
        }
        return status
    }
}
