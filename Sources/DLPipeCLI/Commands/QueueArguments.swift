import DLPipe
import DLPipeLua
import Foundation

/// `run --queue URL --name NAME` (docs/scale-out.md): many workers sharing one
/// job through PostgreSQL. The address comes from `--queue`, else
/// `DLPIPE_QUEUE`, else the job's `dl.config{ queue = ... }`; `--name`, the
/// job's identity in the queue, is required with it (many jobs are called
/// job.lua: a default would let unrelated jobs take each other's URLs).
struct QueueArguments {
    var queue: String?
    var name: String?

    static let environmentVariable = "DLPIPE_QUEUE"

    static func take(_ args: inout Arguments) throws -> QueueArguments {
        QueueArguments(queue: try args.value("--queue"), name: try args.value("--name"))
    }

    /// The queue and job name when the run is in queue mode, nil when it is
    /// not; a usage error for an address that is not PostgreSQL's, for queue
    /// mode without `--name`, and for `--name` without a queue. `job` is nil
    /// before the job file is loaded (the command line and environment are
    /// checked before any script runs).
    func resolve(environment: [String: String], job: JobSettings?) throws -> (address: PostgresAddress, name: String)? {
        let (text, source): (String?, String) = given(environment: environment) ?? (job?.queue, "dl.config queue")
        guard let text else {
            if name != nil, job != nil {
                throw UsageError("--name names a job in a shared queue; give the queue too (--queue URL)", command: "run")
            }
            return nil
        }
        let address = try Self.address(text, source: source, command: "run")
        guard let name else {
            throw UsageError("a shared queue (\(source)) needs --name NAME: the job's identity in the queue", command: "run")
        }
        try Self.check(name: name, command: "run")
        return (address, name)
    }

    /// The address given by `--queue`, else by `DLPIPE_QUEUE` (set and not
    /// empty), with where it came from for messages. `status --queue` takes
    /// its address from here too.
    func given(environment: [String: String]) -> (text: String, source: String)? {
        if let queue { return (queue, "--queue") }
        if let value = environment[Self.environmentVariable], !value.isEmpty { return (value, Self.environmentVariable) }
        return nil
    }

    /// `text` as a PostgreSQL address; a usage error of `command` that names
    /// `source` (the password shown as ***) when it is not one.
    static func address(_ text: String, source: String, command: String) throws -> PostgresAddress {
        do throws(PostgresError) {
            return try PostgresAddress(text)
        } catch {
            throw UsageError("\(source): \(error.message)", command: command)
        }
    }

    /// A usage error of `command` unless `name` can be a job's name.
    static func check(name: String, command: String) throws {
        guard !name.isEmpty, name.count <= 200, !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw UsageError("--name wants 1 to 200 printable characters, not \(name.debugDescription)", command: command)
        }
    }
}

/// What `run` does in queue mode until the engine works with the queue: it
/// checks that the database answers (exit 4 when it does not, as it will
/// then), and refuses to run rather than quietly running without the queue.
enum QueueMode {
    static func refuse(_ address: PostgresAddress, name: String) async -> Int32 {
        let session = PostgresSession(address, label: "dlpipe-queue")
        do throws(PostgresError) {
            _ = try await session.perform { connection throws(PostgresError) in try connection.execute("SELECT 1") }
        } catch {
            Terminal.error("dlpipe: cannot reach the queue: \(error.message)")
            return ExitCode.queueUnreachable
        }
        Terminal.error(
            "dlpipe: queue mode (--queue) is not available yet: \(address) answered, but this dlpipe cannot run job \(name.debugDescription) from it; nothing was downloaded (run without --queue, DLPIPE_QUEUE and dl.config queue)")
        return ExitCode.usage
    }
}
