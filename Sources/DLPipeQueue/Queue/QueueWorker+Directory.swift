import DLPipe
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Which jobs' workers write into an output directory now. Two jobs (two
/// `--name`s) in one directory take each other's final names, so that each
/// one's files come out as `name.1.ext` (a trial saw it, and no word of it):
/// a worker refuses a directory that another job's workers use, as a run
/// without the queue refuses a directory that another run uses (exit 3).
///
/// Every worker holds its job folder's `active` file (under
/// `DIR/.dlpipe/queue/JOB/`) locked shared while it lives: the kernel drops
/// the lock when the worker dies, however it dies, so a job whose workers
/// all ended is no job here. Whether another job's file is held is asked
/// with a non-blocking exclusive lock, let go at once. flock works on NFS
/// as the directory's own lock does (Linux maps it to NFS byte-range locks).
extension QueueWorker {
    /// A job's folder in use by a worker of it, when `DirectoryClaim` found one.
    package struct OtherJob: Sendable, Equatable {
        /// Its id in the queue (its folder's name).
        package let id: Int64
        /// Its `--name` in this worker's database; nil when this database has
        /// no job of that id (a job of another queue database).
        package let name: String?
        /// The `--name` its folder records (`recordJobName`); nil when none is.
        package var recorded: String? = nil

        /// How a message names it: by the name its folder records, which
        /// tells another database's job that has this id from this one's.
        var described: String {
            if let name, recorded == nil || recorded == name { return "\(quoted(name)) (queue job \(id))" }
            if let recorded { return "\(quoted(recorded)) (queue job \(id) of another queue database)" }
            return "queue job \(id) of another queue database"
        }
    }

    /// Marks this worker's job as writing into the output directory (the lock
    /// it returns must live as long as the worker), and lists the other jobs
    /// whose workers write there now.
    package func claimDirectory() throws(DownloadError) -> (lock: RunLock, others: [OtherJob]) {
        let jobs = root + "/.dlpipe/queue"
        // The state folder must be this user's, as for a run without the queue.
        if let problem = StatePermissions.makeFolder(root + "/" + StateLayout.folderName) { throw DownloadError(.io, problem) }
        var isFolder: ObjCBool = false
        let folderExisted = FileManager.default.fileExists(atPath: root + "/" + partFolder, isDirectory: &isFolder)
        createdJobFolder.withLock { $0 = !folderExisted }
        // The part folder's mode, as `start` makes it (the lock file's folder).
        try? FileManager.default.createDirectory(
            atPath: root + "/" + partFolder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        recordJobName()
        let lock: RunLock
        do throws(RunLock.Failure) {
            lock = try RunLock(path: root + "/" + partFolder + "/active", wait: false, shared: true)
        } catch {
            switch error {
            case .io(let message): throw DownloadError(.io, message)
            // Only a probe of another job's worker holds it alone, for an instant.
            case .held(_, let path): throw DownloadError(.io, "\(path) stays locked by another process")
            }
        }
        let ids = ((try? FileManager.default.contentsOfDirectory(atPath: jobs)) ?? [])
            .compactMap(Int64.init).filter { $0 != queue.job && Self.isActive(jobs + "/\($0)/active") }.sorted()
        guard !ids.isEmpty else { return (lock, []) }
        // Their names, as this database knows them (a name only helps the message).
        var names: [Int64: String] = [:]
        let rows = try? loopLink.run(patience: 5) { connection throws(PostgresError) in
            try connection.execute("SELECT id, name FROM dlpipe.jobs WHERE id = ANY($1::bigint[])", [.intArray(ids)]).rows
        }
        for row in rows ?? [] {
            if let id = try? row.int("id"), let name = try? row.text("name") { names[id] = name }
        }
        return (lock, ids.map { OtherJob(id: $0, name: names[$0], recorded: Self.recordedJobName(inFolder: jobs + "/\($0)")) })
    }

    /// A worker refused before it ran (another job writes here, or its job
    /// writes elsewhere) takes back the job folder it made for its claim:
    /// left there, `dlpipe status DIR` listed the job as one that wrote
    /// into the directory, and the folder named a job that never ran there.
    /// Only a folder this worker made, and only while no other worker holds
    /// its `active` lock (one of the same job that started meanwhile keeps
    /// it); a folder that holds anything else stays.
    package func withdrawDirectoryClaim(_ lock: RunLock) {
        guard createdJobFolder.withLock({ $0 }), lock.makeExclusiveIfAlone() else { return }
        let folder = root + "/" + partFolder
        unlink(folder + "/" + Self.jobNameFile)
        unlink(folder + "/active")
        rmdir(folder)
        // The folder of job folders too, when it holds no other.
        rmdir(root + "/.dlpipe/queue")
    }

    /// Whether some process holds the lock file at `path` (a worker of its job).
    package static func isActive(_ path: String) -> Bool {
        // Not waited on, and a regular file only (`SharedFolderFile`): a FIFO
        // put there is no worker's lock.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard FileSystem.isRegular(fd) else { return false }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            return errno == EWOULDBLOCK
        }
        flock(fd, LOCK_UN)
        return false
    }

    /// The line of a worker that found other jobs in its directory.
    package static func otherJobsMessage(_ others: [OtherJob], directory: String, job: String) -> String {
        let named = others.map(\.described).joined(separator: ", ")
        return "another job's workers write into \(directory) now: \(named); job \(job.debugDescription) would take their file names "
            + "and they its (each job's files would come out as name.1.ext). Give each job its own -d, or run them one after the other"
    }
}
