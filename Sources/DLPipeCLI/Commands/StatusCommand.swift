import DLPipe
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
        guard FileManager.default.fileExists(atPath: path) else {
            if json {
                print(#"{"state":null,"finished":0,"failed":0,"handled":0,"partial":0,"cancelled":0,"running_pid":\#(holder.map(String.init) ?? "null")}"#)
            } else {
                print("\(directory): no dlpipe state (no download has run here)")
                if let queueHint { print(queueHint) }
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
            print(StatusReport.json(path: path, records: records, runs: runs, holder: holder, untracked: untracked))
        } else {
            print(StatusReport.text(path: path, records: records, runs: runs, holder: holder, untracked: untracked),
                  terminator: "")
            if let queueHint { print(queueHint) }
        }
        return ExitCode.ok
    }

    /// A line saying that workers of a shared queue write or wrote into
    /// `directory` (they keep their part files in `.dlpipe/queue/JOB/`),
    /// whose state is in the queue's database, not here; nil when none did.
    /// A job whose folder's `active` file a process holds has workers here
    /// now; the others wrote here before (or were refused and left).
    static func sharedQueueHint(_ directory: String) -> String? {
        let folder = directory + "/.dlpipe/queue"
        let jobs = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).compactMap(Int64.init).sorted()
        guard !jobs.isEmpty else { return nil }
        let live = jobs.filter { QueueWorker.isActive(folder + "/\($0)/active") }
        let past = jobs.filter { !live.contains($0) }
        // The names their folders record (workers before this version wrote none).
        var names: [Int64: String] = [:]
        for id in jobs { names[id] = QueueWorker.recordedJobName(inFolder: folder + "/\(id)") }
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
            + "what they fetched is in the queue's database: dlpipe status --queue URL --name \(name)"
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
