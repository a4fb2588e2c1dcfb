import DLPipe
import DLPipeQueue
import Foundation

/// `dlpipe queue SUBCOMMAND --queue URL --name NAME` (docs/scale-out.md,
/// "Steering a job"): the control plane of a shared job. Each subcommand is
/// one transaction (`QueueControlPlane`); exit codes as `status --queue`'s.
enum QueueCommand {
    static let subcommands = ["failures", "runs", "retry", "pause", "resume", "cancel", "stop", "purge"]

    static func run(_ raw: [String]) async throws -> Int32 {
        var args = Arguments(raw, command: "queue")
        if args.flag("-h", "--help") || raw.isEmpty {
            print(HelpText.queue, terminator: "")
            return raw.isEmpty ? ExitCode.usage : ExitCode.ok
        }
        let json = args.flag("--json")
        let queue = try QueueArguments.take(&args)
        let host = try args.value("--host")
        let kind = try args.value("--kind")
        let run = try args.int("--run", in: 1...Int(Int64.max))
        let olderThan = try args.value("--older-than")
        let failed = args.flag("--failed")
        let positionals = try args.positionals()
        guard let verb = positionals.first, subcommands.contains(verb), positionals.count == 1 else {
            let what = positionals.first.map { "unknown subcommand \($0.debugDescription)" } ?? "a subcommand is needed"
            throw UsageError("\(what): one of \(subcommands.joined(separator: ", "))", command: "queue")
        }
        if verb != "failures", verb != "retry" || run != nil, host != nil || kind != nil || run != nil {
            throw UsageError("--host and --kind choose failures (`dlpipe queue failures`, `retry --failed`), --run only for `failures`", command: "queue")
        }
        if (verb == "retry") != failed {
            throw UsageError(verb == "retry" ? "retry takes --failed: it retries the failed downloads of the latest run" : "--failed goes with `dlpipe queue retry`", command: "queue")
        }
        if (verb == "purge") != (olderThan != nil) {
            throw UsageError(verb == "purge" ? "purge needs --older-than DURATION (30d, 12h, 90m)" : "--older-than goes with `dlpipe queue purge`", command: "queue")
        }
        let seconds = try olderThan.map(duration)
        guard let given = queue.given(environment: ProcessInfo.processInfo.environment) else {
            throw UsageError("which queue? give --queue URL (or set \(QueueArguments.environmentVariable))", command: "queue")
        }
        let address = try QueueArguments.address(given.text, source: given.source, command: "queue")
        guard let name = queue.name else { throw UsageError("which job? give --name NAME", command: "queue") }
        try QueueArguments.check(name: name, command: "queue")
        let session = PostgresSession(address, label: "dlpipe-queue", applicationName: "dlpipe queue")
        defer { session.close() }
        do throws(PostgresError) {
            switch verb {
            case "failures":
                let reading = try await session.perform { connection throws(PostgresError) in
                    try QueueControlPlane.failures(job: name, run: run.map(Int64.init), host: host, kind: kind, on: connection)
                }
                if let missing = missingRun(run, reading, name: name) { return missing }
                return QueueStatusCommand.show(reading, address: address, name: name) { QueueControlReport.failures($0, json: json, name: name, host: host, kind: kind) }
            case "runs":
                let reading = try await session.perform { connection throws(PostgresError) in try QueueControlPlane.runs(job: name, on: connection) }
                return QueueStatusCommand.show(reading, address: address, name: name) { QueueControlReport.runs($0, json: json, name: name) }
            case "retry":
                let reading = try await session.perform { connection throws(PostgresError) in
                    try QueueControlPlane.retryFailed(job: name, host: host, kind: kind, on: connection)
                }
                return QueueStatusCommand.show(reading, address: address, name: name) { QueueControlReport.retried($0, name: name, json: json) }
            case "cancel":
                let reading = try await session.perform { connection throws(PostgresError) in try QueueControlPlane.cancel(job: name, on: connection) }
                return QueueStatusCommand.show(reading, address: address, name: name) { QueueControlReport.cancelled($0, name: name, json: json) }
            case "purge":
                let reading = try await session.perform { connection throws(PostgresError) in
                    try QueueControlPlane.purge(job: name, olderThan: seconds ?? 0, on: connection)
                }
                return QueueStatusCommand.show(reading, address: address, name: name) { QueueControlReport.purged($0, name: name, json: json) }
            default:
                let reading = try await session.perform { connection throws(PostgresError) in
                    switch verb {
                    case "pause": try QueueControlPlane.pause(job: name, on: connection)
                    case "resume": try QueueControlPlane.resume(job: name, on: connection)
                    default: try QueueControlPlane.stop(job: name, on: connection)
                    }
                }
                return QueueStatusCommand.show(reading, address: address, name: name) { QueueControlReport.steered($0, verb: verb, name: name, json: json) }
            }
        } catch where error.kind == .connection {
            Terminal.error("dlpipe: \(error.unreachableMessage)")
            return ExitCode.queueUnreachable
        } catch {
            Terminal.error("dlpipe: queue \(verb): \(error.message)")
            return ExitCode.failed
        }
    }

    /// `30d`, `12h`, `90m`, `45s`, `2w`, or several (`1d12h`): seconds. A
    /// bare number is refused (minutes or days?), except 0.
    static func duration(_ text: String) throws -> Double {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]
        var total = 0.0
        var number = ""
        for character in text {
            if character.isASCII && (character.isNumber || character == ".") {
                number.append(character)
            } else if let unit = units[character], let value = Double(number) {
                total += value * unit
                number = ""
            } else {
                number = "!"
                break
            }
        }
        guard number.isEmpty || number == "0", !text.isEmpty, total.isFinite else {
            throw UsageError("--older-than wants a duration with its unit (30d, 12h, 90m, 45s, 2w, 1d12h), not \(text.debugDescription)", command: "queue")
        }
        return total
    }

    /// A run asked for that the job does not have (never made, or purged):
    /// not "no failure", but exit 1 as an unknown job.
    private static func missingRun(_ run: Int?, _ reading: QueueReading<QueueFailureList>, name: String) -> Int32? {
        guard let run, case .found(let list) = reading, list.run == nil else { return nil }
        Terminal.error("dlpipe: job \(Terminal.clean(name.debugDescription)) has no run #\(run) (`dlpipe queue runs` lists its runs)")
        return ExitCode.failed
    }
}
