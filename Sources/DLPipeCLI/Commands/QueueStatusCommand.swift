import DLPipe
import DLPipeQueue
import Foundation

/// `dlpipe status --queue URL [--name NAME] [--json]` (docs/scale-out.md,
/// "Watching a job"): one job of a shared queue, or the list of its jobs.
/// It only reads: it creates no schema, migrates nothing and takes no
/// claim back. A database that cannot be reached is exit 4, as for `run`;
/// no queue there, an unknown name or a schema it cannot read is exit 1.
enum QueueStatusCommand {
    /// The queue's address when `status` is asked about a queue: `--queue`,
    /// or `DLPIPE_QUEUE` when no directory (nor `--state`) is named; nil for
    /// a directory's status. Usage errors as `run`'s for a bad address, and
    /// for mixing a queue with a directory or `--name` with no queue.
    static func address(_ queue: QueueArguments, directory: String?, statePath: String?, environment: [String: String])
        throws -> PostgresAddress?
    {
        let namesADirectory = directory != nil || statePath != nil
        if queue.queue != nil, namesADirectory {
            throw UsageError("status shows a directory or a queue (--queue), not both", command: "status")
        }
        guard !namesADirectory, let given = queue.given(environment: environment) else {
            if queue.name != nil {
                throw UsageError("--name names a job in a shared queue; give the queue too (--queue URL)", command: "status")
            }
            return nil
        }
        let address = try QueueArguments.address(given.text, source: given.source, command: "status")
        if let name = queue.name { try QueueArguments.check(name: name, command: "status") }
        return address
    }

    static func run(_ address: PostgresAddress, name: String?, json: Bool) async -> Int32 {
        let session = PostgresSession(address, label: "dlpipe-status", applicationName: "dlpipe status")
        defer { session.close() }
        do throws(PostgresError) {
            guard let name else {
                let reading = try await session.perform { connection throws(PostgresError) in try QueueJobList.read(on: connection) }
                return show(reading, address: address) { json ? QueueStatusReport.json($0, address: address) : QueueStatusReport.text($0, address: address) }
            }
            let reading = try await session.perform { connection throws(PostgresError) in try QueueReport.read(job: name, on: connection) }
            return show(reading, address: address, name: name) {
                json ? QueueStatusReport.json($0, address: address) : QueueStatusReport.text($0, address: address)
            }
        } catch where error.kind == .connection {
            // The password never shows: messages name the address redacted.
            Terminal.error("dlpipe: \(error.unreachableMessage)")
            return ExitCode.queueUnreachable
        } catch {
            Terminal.error("dlpipe: cannot read the queue at \(address): \(error)")
            return ExitCode.failed
        }
    }

    /// A reading printed, or why there is none (exit 1); `dlpipe queue` prints its own the same way.
    static func show<Figures>(
        _ reading: QueueReading<Figures>, address: PostgresAddress, name: String? = nil, render: (Figures) -> String
    ) -> Int32 {
        switch reading {
        case .found(let figures):
            let text = render(figures)
            print(text, terminator: text.hasSuffix("\n") ? "" : "\n")
            return ExitCode.ok
        case .noQueue:
            Terminal.error("dlpipe: no dlpipe queue in this database (\(address)): no worker has started with it")
            return ExitCode.failed
        case .unknownJob(let names, let count):
            let known = Terminal.clean(names.map(\.debugDescription).joined(separator: ", "))
            let more = count > names.count ? " and \(count - names.count) more" : ""
            let which = names.isEmpty ? "it has no job yet" : "its jobs: \(known)\(more)"
            Terminal.error("dlpipe: no job \(Terminal.clean(name?.debugDescription ?? "")) in the queue at \(address); \(which)")
            return ExitCode.failed
        }
    }
}
