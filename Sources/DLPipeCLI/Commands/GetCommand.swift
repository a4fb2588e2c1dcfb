import DLPipe
import Foundation

/// `dlpipe get URL... [options]`: ad-hoc downloads through the engine.
enum GetCommand {
    static func run(_ raw: [String]) async throws -> Int32 {
        var args = Arguments(raw, command: "get")
        if args.flag("-h", "--help") {
            print(HelpText.get, terminator: "")
            return ExitCode.ok
        }
        let inputs = try args.values("-i", "--input")
        let output = try args.value("-o", "--output")
        let sha256 = try args.value("--sha256")
        var headers: [String: String] = [:]
        for line in try args.values("-H", "--header") {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                !line.contains("\n"), !line.contains("\r")
            else {
                throw UsageError("-H wants \"Name: value\", not \(line.debugDescription)", command: "get")
            }
            headers[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var config = EngineConfiguration()
        config.directory = try args.value("-d", "--dir") ?? "."
        config.concurrency = try args.int("-j", "--concurrency", in: 1...1000) ?? config.concurrency
        config.perHost = try args.int("--per-host", in: 1...1000) ?? config.perHost
        config.retries = try args.int("--retries", in: 0...100) ?? config.retries
        if let text = try args.value("--timeout") {
            guard let seconds = Double(text), seconds > 0, seconds <= 86400 else {
                throw UsageError("--timeout wants seconds above 0, not \(text.debugDescription)", command: "get")
            }
            config.timeout = seconds
        }
        if let text = try args.value("--rate") {
            guard let rate = ByteRate.parse(text) else {
                throw UsageError("--rate wants bytes per second like 500K or 2M, not \(text.debugDescription)", command: "get")
            }
            config.rateLimit = rate
        }
        let json = args.flag("--json")
        let quiet = args.flag("-q", "--quiet")
        let progressText = try args.value("--progress") ?? "auto"
        guard let progress = ProgressMode(rawValue: progressText) else {
            throw UsageError("--progress wants auto, bars, lines or none, not \(progressText.debugDescription)", command: "get")
        }
        var urls = try args.positionals()
        for input in inputs { urls += try URLList.read(input) }
        guard !urls.isEmpty else { throw UsageError("no URL given", command: "get") }
        if urls.count > 1 && (output != nil || sha256 != nil) {
            throw UsageError("-o and --sha256 apply to one URL only; got \(urls.count) URLs", command: "get")
        }
        if let sha256, sha256.count != 64 || !sha256.allSatisfy(\.isHexDigit) {
            throw UsageError("--sha256 wants 64 hex digits", command: "get")
        }
        if let output, output.isEmpty || output.contains("\0") {
            throw UsageError("-o wants a file name", command: "get")
        }

        let engine: DownloadEngine
        do {
            engine = try DownloadEngine(configuration: config)
        } catch {
            Terminal.error("dlpipe: \(error.message)")
            return ExitCode.failed
        }
        let reporter = Reporters.make(progress: progress, json: json, quiet: quiet)
        engine.observe { reporter.handle($0) }
        for url in urls {
            engine.add(DownloadRequest(url: url, name: output, headers: headers, sha256: sha256))
        }
        let (summary, hookCode) = await engine.waitUntilDrained()
        reporter.finish(summary)
        engine.shutdown()
        if let hookCode { return Int32(clamping: hookCode) }
        return summary.failed > 0 ? ExitCode.failed : ExitCode.ok
    }
}

/// Reads a URL list: one URL a line, blank lines and `#` comments ignored.
enum URLList {
    static func read(_ source: String) throws -> [String] {
        let data: Data
        if source == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let contents = FileManager.default.contents(atPath: source) else {
                throw UsageError("cannot read the URL list \(source.debugDescription)", command: "get")
            }
            data = contents
        }
        return String(decoding: data, as: UTF8.self)
            .split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }
}
