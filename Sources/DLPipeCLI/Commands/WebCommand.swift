internal import CPosix
import DLPipe
import DLPipeQueue
import DLPipeWeb
import Foundation

/// `dlpipe web --queue URL [--name NAME]` or `dlpipe web [DIR]`
/// (docs/operating.md, "The fleet's view"): the live page, `/api/view` and
/// `/metrics` of a shared queue or of a directory's state, served until
/// SIGINT or SIGTERM (exit 130, as any dlpipe command a signal stops). The
/// token rules are `--web`'s.
enum WebCommand {
    /// Where it listens without `--listen`: loopback, a port the kernel picks.
    static let defaultListen = "127.0.0.1:0"

    static func run(_ raw: [String]) async throws -> Int32 {
        var args = Arguments(raw, command: "web")
        if args.flag("-h", "--help") {
            print(HelpText.web, terminator: "")
            return ExitCode.ok
        }
        let environment = ProcessInfo.processInfo.environment
        let queue = try QueueArguments.take(&args)
        let statePath = try StateOption.take(&args)
        let options = try WebOptions.take(&args, environment: environment, flag: "--listen", fallback: defaultListen)
        let positionals = try args.positionals()
        guard positionals.count <= 1 else { throw UsageError("web shows one directory or one queue", command: "web") }
        let source: any WebSource
        let what: String
        if queue.queue != nil, !positionals.isEmpty || statePath != nil {
            throw UsageError("web shows a directory or a queue (--queue), not both", command: "web")
        }
        if positionals.isEmpty, statePath == nil, let given = queue.given(environment: environment) {
            let address = try QueueArguments.address(given.text, source: given.source, command: "web")
            if let name = queue.name { try QueueArguments.check(name: name, command: "web") }
            // A mistyped address fails now (exit 4); later outages show on the page.
            if let failure = QueueMode.reachable(address) {
                Terminal.error("dlpipe: \(failure.message)")
                return failure.code
            }
            source = QueueView(address: address, name: queue.name)
            what = "queue \(address)" + (queue.name.map { ", job \(Terminal.clean($0.debugDescription))" } ?? "")
        } else {
            if queue.name != nil {
                throw UsageError("--name names a job in a shared queue; give the queue too (--queue URL)", command: "web")
            }
            let directory = positionals.first ?? "."
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw UsageError("\(directory): no such directory", command: "web")
            }
            source = DirectoryView(directory: directory, statePath: statePath)
            what = "directory \(Terminal.clean(directory))"
        }
        guard let options else { return ExitCode.usage }
        let server: WebServer
        do {
            server = try WebServer(address: options.address, access: WebAccess(token: options.token), source: source)
        } catch {
            Terminal.error("dlpipe: web: \(error.description)")
            return ExitCode.failed
        }
        Terminal.error("dlpipe: web view of the \(what) at \(server.announcement)" + (options.token == nil ? "" : " (with its token)"))
        await untilStopped()
        server.stop()
        Terminal.error("dlpipe: stopped")
        return ExitCode.stopped
    }

    /// Returns at the first SIGINT or SIGTERM (a second one exits at once).
    private static func untilStopped() async {
        dl_stop_signals_keep_nothing()
        let descriptor = dl_stop_signals_install()
        guard descriptor >= 0 else {
            Terminal.error("dlpipe: cannot catch SIGINT and SIGTERM: \(String(cString: strerror(errno)))")
            return
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                ThreadName.set("dlpipe-stop")
                var byte: UInt8 = 0
                while read(descriptor, &byte, 1) < 0 && errno == EINTR {}
                continuation.resume()
            }
            thread.start()
        }
    }
}
