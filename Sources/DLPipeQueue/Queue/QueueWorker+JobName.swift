import DLPipe

/// A job folder (`DIR/.dlpipe/queue/JOB/`) is named by the job's row id, which
/// tells a user nothing: `dlpipe status DIR` could only say "queue job 7" and
/// ask for `--name NAME`. Every worker that takes the directory writes its
/// job's `--name` into the folder's `name` file, so that the folder says
/// whose it is, and a worker that finds another job there can name it even
/// when that job lives in another queue database. Only the name: the
/// queue's URL may hold a password, and the shared directory is no place for
/// it (docs/design/queue-schema.md, "Credentials").
extension QueueWorker {
    /// The file in a job folder that holds the job's `--name`.
    static let jobNameFile = "name"
    /// Longer contents are no name a worker wrote: ignored.
    static let jobNameLimit = 4096

    /// Writes the job's name into its folder, unless it is there already.
    /// A hint only: a failure (a full disk, a read-only folder) is ignored.
    func recordJobName() {
        let folder = root + "/" + partFolder
        guard Self.recordedJobName(inFolder: folder) != settings.name else { return }
        _ = SharedFolderFile.replace(folder + "/" + Self.jobNameFile, with: Array((settings.name + "\n").utf8))
    }

    /// The `--name` recorded in the job folder `folder`; nil when none is
    /// (workers of versions before this one wrote none) or it is unreadable.
    package static func recordedJobName(inFolder folder: String) -> String? {
        guard let bytes = SharedFolderFile.contents(folder + "/" + jobNameFile, limit: jobNameLimit),
            bytes.count > 1, bytes.last == UInt8(ascii: "\n"),
            let name = String(validating: bytes.dropLast(), as: UTF8.self), !name.isEmpty
        else { return nil }
        return name
    }
}
