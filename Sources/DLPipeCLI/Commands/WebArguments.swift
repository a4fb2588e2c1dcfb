import DLPipeWeb
import Foundation

/// `--web ADDR:PORT` and its token (`--web-token`, `--web-token-file`,
/// `DLPIPE_WEB_TOKEN`): docs/operating.md.
struct WebOptions {
    var address: WebAddress
    /// Required for an address other than loopback; optional on loopback.
    var token: String?

    /// Takes the web options out of `args`; nil without `flag` (`--web`
    /// for a run; `dlpipe web` says `--listen`, with `fallback` when absent).
    static func take(
        _ args: inout Arguments, environment: [String: String], flag: String = "--web", fallback: String? = nil
    ) throws -> WebOptions? {
        let command = args.command
        let listen = try args.value(flag) ?? fallback
        let given = try args.secretValues("--web-token", secret: ArgvSecret.whole).last
        let file = try args.value("--web-token-file")
        guard let listen else {
            if given != nil || file != nil {
                throw UsageError("--web-token and --web-token-file go with \(flag) ADDR:PORT", command: command)
            }
            return nil
        }
        let address: WebAddress
        do {
            address = try WebAddress(parsing: listen)
        } catch {
            throw UsageError("\(flag) \(error.description)", command: command)
        }
        var token = given
        if token == nil, let file {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw UsageError("--web-token-file: cannot read \(file.debugDescription)", command: command)
            }
            token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        if token == nil, let fromEnvironment = environment["DLPIPE_WEB_TOKEN"], !fromEnvironment.isEmpty {
            token = fromEnvironment
        }
        if let token, let problem = WebAccess.problem(token: token) {
            throw UsageError("\(flag): \(problem)", command: command)
        }
        if token == nil && !address.isLoopback {
            throw UsageError(
                "\(flag) \(listen) is reachable from other machines: give a token (DLPIPE_WEB_TOKEN, --web-token-file FILE "
                    + "or --web-token TOKEN), or listen on a loopback address such as 127.0.0.1:\(address.port)",
                command: command)
        }
        return WebOptions(address: address, token: token)
    }
}
