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
        let inputs = try args.values("-i", "--input")
        let output = try args.value("-o", "--output")
        let sha256 = try args.value("--sha256")
        var headers: [String: String] = [:]
        for line in try args.values("-H", "--header") {
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
        var urls = try args.positionals()
        for input in inputs { urls += try URLList.read(input) }
        guard !urls.isEmpty else { throw UsageError("no URL given", command: "get") }
        if urls.count > 1 && (output != nil || sha256 != nil) {
            throw UsageError("-o and --sha256 apply to one URL only; got \(urls.count) URLs", command: "get")
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

        var session: ScriptSession?
        if options.usesScripts {
            guard let loaded = RunDriver.loadScripts(options.scripts, quiet: options.quiet, json: options.json) else { return ExitCode.usage }
            session = loaded
        }
        if let target, target != .stdout {
            let settings = options.configuration(job: session?.settings)
            try target.checkNoClobber(url: urls[0], folder: options.fileFolder ?? settings.directory, statePath: settings.statePath ?? "")
        }
        return await RunDriver.run(
            options: options, session: session,
            requests: urls.lazy.map {
                DownloadRequest(url: $0, name: request.name, directory: request.directory, headers: headers, sha256: sha256)
            })
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
        return lines(of: data)
    }

    /// The non-empty lines that are not `#` comments, trimmed of blanks; LF, CRLF
    /// and CR all end a line.
    /// Works on bytes: a list of 100,000 URLs should cost milliseconds, not the
    /// grapheme and Foundation string work per line it would cost otherwise.
    static func lines(of data: Data) -> [String] {
        func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        var urls: [String] = []
        for line in [UInt8](data).split(whereSeparator: { $0 == 0x0A || $0 == 0x0D }) {
            guard let first = line.firstIndex(where: { !isBlank($0) }),
                  let last = line.lastIndex(where: { !isBlank($0) }),
                  line[first] != UInt8(ascii: "#") else { continue }
            urls.append(String(decoding: line[first...last], as: UTF8.self))
        }
        return urls
    }
}
