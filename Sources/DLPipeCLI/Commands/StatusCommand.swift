import DLPipe
import DLPipeQueue
import Foundation

/// `dlpipe status [DIR]`: what the state of an output directory holds
/// (`--queue URL`: a shared queue's, in QueueStatusCommand).
enum StatusCommand {
    static func run(_ raw: [String]) async throws -> Int32 {
        var args = Arguments(raw, command: "status")
        if args.flag("-h", "--help") {
            print(HelpText.status, terminator: "")
            return ExitCode.ok
        }
        let json = args.flag("--json")
        let queue = try QueueArguments.take(&args)
        let statePath = try StateOption.take(&args)
        let positionals = try args.positionals()
        guard positionals.count <= 1 else { throw UsageError("status takes one directory", command: "status") }
        if let address = try QueueStatusCommand.address(
            queue, directory: positionals.first, statePath: statePath, environment: ProcessInfo.processInfo.environment)
        {
            return await QueueStatusCommand.run(address, name: queue.name, json: json)
        }
        let directory = positionals.first ?? "."
        // A mistyped folder must not read as "nothing has run here" (exit 0): cron
        // scripts that check status would take it for an empty, healthy state.
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else {
            throw UsageError("\(directory): no such directory", command: "status")
        }
        guard isDirectory.boolValue else { throw UsageError("\(directory): not a directory", command: "status") }
        let layout = StateLayout(directory: directory)
        let path = layout.database(statePath: statePath)
        let holder = RunLock.holder(path: layout.lock(statePath: statePath))
        let queueHint = json ? nil : sharedQueueHint(directory)
        let queueJobs = json ? sharedQueueJSON(directory) : "[]"
        guard FileManager.default.fileExists(atPath: path) else {
            if json {
                var object = JSONObject()
                object.add("state", json: "null")
                for field in ["finished", "failed", "handled", "partial", "cancelled"] { object.add(field, 0) }
                object.add("running_pid", json: holder.map(String.init) ?? "null")
                object.add("shared_queue", json: queueJobs)
                print(object.json)
            } else {
                if let queueHint {
                    print(sharedQueueHeadline(directory))
                    print(queueHint)
                } else {
                    print("\(directory): no dlpipe state (no download has run here)")
                }
            }
            return ExitCode.ok
        }
        let records: [DownloadRecord], runs: [RunRecord], released: [ReleasedFile]
        do throws(StateFailure) {
            let store = try StateStore(path: path)
            records = BytesOnDisk.applied(to: try store.records(), in: directory)
            runs = try store.runs(limit: 5)
            released = try store.releasedFiles()
        } catch {
            Terminal.error("dlpipe: \(error.message)")
            return ExitCode.failed
        }
        // Only those still there: a user may have removed them since.
        let untracked = released.filter { BytesOnDisk.regularFileSize(directory + "/" + $0.path) != nil }
        if json {
            print(StatusReport.json(
                path: path, records: records, runs: runs, holder: holder, untracked: untracked, sharedQueue: queueJobs))
        } else {
            print(StatusReport.text(path: path, records: records, runs: runs, holder: holder, untracked: untracked),
                  terminator: "")
            if let queueHint { print(queueHint) }
        }
        return ExitCode.ok
    }

    /// What a directory without a state of its own, which a shared queue's
    /// workers wrote into, is (`status DIR` and `web DIR` both say it):
    /// downloads did run here, their state is in the queue's database; "no
    /// download has run here" misled.
    static func sharedQueueHeadline(_ directory: String) -> String {
        "\(directory): no dlpipe state of its own (the downloads here are a shared queue's, kept in its database)"
    }

    /// A line saying that workers of a shared queue write or wrote into
    /// `directory` (they keep their part files in `.dlpipe/queue/JOB/`),
    /// whose state is in the queue's database, not here; nil when none did.
    /// A job whose folder's `active` file a process holds has workers here
    /// now; the others wrote here before (or were refused and left).
    /// `command` is the one it points to (`status` or `web`), with the queue's
    /// address left for the reader to fill in.
    static func sharedQueueHint(_ directory: String, command: String = "status") -> String? {
        let found = sharedQueueJobs(directory)
        guard !found.isEmpty else { return nil }
        let jobs = found.map(\.id)
        let live = found.filter(\.writingNow).map(\.id)
        let past = jobs.filter { !live.contains($0) }
        var names: [Int64: String] = [:]
        for job in found { names[job.id] = job.name }
        func named(_ ids: [Int64]) -> String {
            "queue job\(ids.count == 1 ? "" : "s") "
                + ids.map { id in names[id].map { "\(id) (\(quoted($0)))" } ?? String(id) }.joined(separator: ", ")
        }
        var parts: [String] = []
        if !live.isEmpty { parts.append("workers of \(named(live)) write here now") }
        if !past.isEmpty { parts.append((live.isEmpty ? "workers of " : "") + "\(named(past)) wrote here") }
        // One job, named: the command that shows it, ready to copy (not for
        // a name with control characters, which would reach the terminal).
        let known = Set(jobs.compactMap { names[$0] })
        let printable = known.first.map { !$0.unicodeScalars.contains(where: isControl) } ?? false
        let name = known.count == 1 && names.count == jobs.count && printable ? shellWord(known.first!) : "NAME"
        return "shared queue: " + parts.joined(separator: ", those of ") + "; "
            + "what they fetched is in the queue's database: dlpipe \(command) --queue URL --name \(name)"
    }

    /// The queue jobs whose workers write or wrote into `directory` (their
    /// folders under `.dlpipe/queue/`), by id: the name a folder records
    /// (workers before version 0.1 wrote none), and whether a process holds
    /// its `active` file now.
    static func sharedQueueJobs(_ directory: String) -> [(id: Int64, name: String?, writingNow: Bool)] {
        let folder = directory + "/.dlpipe/queue"
        let jobs = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).compactMap(Int64.init).sorted()
        return jobs.map { id in
            (id, QueueWorker.recordedJobName(inFolder: folder + "/\(id)"), QueueWorker.isActive(folder + "/\(id)/active"))
        }
    }

    /// `sharedQueueJobs` as `--json`'s `shared_queue`: a script must not
    /// read a directory that workers write into now as idle (the text says
    /// so in its last line; the JSON had nothing).
    static func sharedQueueJSON(_ directory: String) -> String {
        "[" + sharedQueueJobs(directory).map { job -> String in
            var o = JSONObject()
            o.add("job", job.id)
            o.add("name", job.name)
            o.add("writing_now", job.writingNow)
            return o.json
        }.joined(separator: ",") + "]"
    }

    /// `text` as one word of a POSIX shell: as it is when it is made of
    /// letters, digits and `._-` only, else in single quotes.
    static func shellWord(_ text: String) -> String {
        let plain = !text.isEmpty && text.unicodeScalars.allSatisfy {
            ($0.isASCII && (CharacterSet.alphanumerics.contains($0))) || "._-".unicodeScalars.contains($0)
        }
        return plain ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
