import DLPipe
import Foundation

/// `dlpipe`: dispatches to a subcommand and exits with its status.
@main
struct Entry {
    static func main() async {
        // Before anything uses OpenSSL (a script's dl.sha256, libpq, libcurl).
        _ = OpenSSLProcess.prepared
        MemoryTuning.apply()
        var arguments = Array(CommandLine.arguments.dropFirst())
        let code: Int32
        do {
            code = try await dispatch(&arguments)
        } catch let error as UsageError {
            Terminal.error("dlpipe: \(error.message)")
            Terminal.error("Try 'dlpipe \(error.command.map { $0 + " " } ?? "")--help' for more information.")
            code = ExitCode.usage
        } catch {
            Terminal.error("dlpipe: \(error)")
            code = ExitCode.usage
        }
        StandardOutput.shared.flush()
        exit(code)
    }

    private static func dispatch(_ arguments: inout [String]) async throws -> Int32 {
        guard let first = arguments.first else {
            print(HelpText.main, terminator: "")
            return ExitCode.usage
        }
        switch first {
        case "--help", "-h", "help":
            print(HelpText.main, terminator: "")
            return ExitCode.ok
        case "--version", "-V":
            print("dlpipe \(DLPipeVersion.string) (\(DLPipeVersion.libraries))")
            return ExitCode.ok
        case "get":
            arguments.removeFirst()
            return try await GetCommand.run(arguments)
        case "run":
            arguments.removeFirst()
            return try await RunCommand.run(arguments)
        case "status":
            arguments.removeFirst()
            return try await StatusCommand.run(arguments)
        case "queue":
            arguments.removeFirst()
            return try await QueueCommand.run(arguments)
        case "web":
            arguments.removeFirst()
            return try await WebCommand.run(arguments)
        case "check":
            arguments.removeFirst()
            return try await CheckCommand.run(arguments)
        case "lua-defs":
            arguments.removeFirst()
            return try LuaDefsCommand.run(arguments)
        default:
            throw UsageError("unknown command \(first.debugDescription)")
        }
    }
}

/// The documented exit statuses (docs/cli.md, "Exit codes").
enum ExitCode {
    static let ok: Int32 = 0
    static let failed: Int32 = 1
    static let usage: Int32 = 2
    static let locked: Int32 = 3
    /// The shared queue's database cannot be reached (--queue).
    static let queueUnreachable: Int32 = 4
    static let stopped: Int32 = 130
}

/// A mistake on the command line: a one-line message plus a hint.
struct UsageError: Error {
    let message: String
    var command: String?
    init(_ message: String, command: String? = nil) {
        self.message = message
        self.command = command
    }
}
