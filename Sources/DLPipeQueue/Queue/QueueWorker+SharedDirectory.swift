import DLPipe
import Foundation

/// Every worker of a job must write into one and the same directory (a
/// shared file system, or one machine's disk): workers given different ones
/// (a typo in one cron line, a mount point that is not mounted) would each
/// place their share of the files in their own, and the job's state, which
/// is shared, would describe files that are in another directory.
///
/// The first worker of a job writes a random token into the job's folder of
/// its directory (`DIR/.dlpipe/queue/JOB/directory`) and into the job's row;
/// a worker that starts while other workers of the job live and checked
/// theirs must find the same token in its own directory, or it is refused
/// (exit 3) before any request. A worker that passes notes the token in its
/// own row: workers registered and not yet checked do not count. Paths are
/// not compared: the same share may be mounted under different paths on
/// different machines. Workers check one at a time (the job's row is locked
/// from the read of the token to the commit), so workers that start
/// together on one directory agree on one token. With no checked worker
/// alive, a worker takes its directory as the job's (its token, or a new
/// one): a job may move to another directory between runs.
extension QueueWorker {
    /// What the check found.
    package enum SharedDirectory: Sendable, Equatable {
        /// This directory is the job's (or is now: no checked worker lives).
        case shared
        /// Other workers of the job live and write into another directory;
        /// `tokenFound`: this directory holds another token (else none, or
        /// a damaged one).
        case elsewhere(liveWorkers: Int, tokenFound: Bool)
        /// The token could not be written into the job's folder.
        case unwritable(String)
    }

    /// The token file in the job's folder of `directory` (this worker's, as
    /// the check reads it, or as the user gave it, for messages).
    package func directoryTokenPath(in directory: String) -> String {
        directory + "/" + partFolder + "/directory"
    }

    /// Whether this worker's directory is the one the job's live, checked
    /// workers write into; records it as the job's when none lives.
    package func checkSharedDirectory() throws(PostgresError) -> SharedDirectory {
        let path = directoryTokenPath(in: root)
        return try loopLink.run(patience: 5) { connection throws(PostgresError) -> SharedDirectory in
            try connection.transaction { () throws(PostgresError) -> SharedDirectory in
                // NO KEY UPDATE: workers registering meanwhile (their rows
                // reference the job's) are not held up.
                let row = try connection.execute(
                    """
                    SELECT j.directory_token,
                      (SELECT count(*) FROM dlpipe.workers w
                       WHERE w.job_id = j.id AND w.id <> $2 AND w.stopped_at IS NULL AND w.lease_until >= now()
                         AND w.directory_token IS NOT NULL) AS others
                    FROM dlpipe.jobs j WHERE j.id = $1
                    FOR NO KEY UPDATE OF j
                    """, [.int(queue.job), .int(worker)]
                ).rows[0]
                let known = try row.optionalText("directory_token")
                let others = Int(try row.int("others"))
                let found = Self.readDirectoryToken(path)
                let token: String
                if let known, others > 0 {
                    guard found == known else { return .elsewhere(liveWorkers: others, tokenFound: found != nil) }
                    token = known
                } else if let found {
                    token = found
                } else {
                    switch Self.writeDirectoryToken(path) {
                    case .success(let written): token = written
                    case .failure(let problem): return .unwritable(problem.message)
                    }
                }
                if token != known {
                    try connection.execute(
                        "UPDATE dlpipe.jobs SET directory_token = $2 WHERE id = $1", [.int(queue.job), .text(token)])
                }
                try connection.execute(
                    "UPDATE dlpipe.workers SET directory_token = $2 WHERE id = $1", [.int(worker), .text(token)])
                return .shared
            }
        }
    }

    /// The token in `path`, nil when there is none or it is not one (a file
    /// cut short by a crash is written again).
    static func readDirectoryToken(_ path: String) -> String? {
        // 64 hex digits and a newline; anything larger is no token.
        guard let bytes = SharedFolderFile.contents(path, limit: 256) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.utf8.count == 64, text.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            return nil
        }
        return text
    }

    /// A new token, written beside `path` and renamed onto it (whole or not at all).
    static func writeDirectoryToken(_ path: String) -> Result<String, DownloadError> {
        // 32 random bytes in hex, as the credentials' key is made.
        let token = StoredCredentials.newSecretHex()
        if let code = SharedFolderFile.replace(path, with: Array((token + "\n").utf8)) {
            return .failure(FileErrors.io("cannot write the job's directory token", path, errno: code))
        }
        return .success(token)
    }

    /// The line of a worker refused for a directory that is not its job's.
    package static func elsewhereMessage(
        liveWorkers: Int, tokenFound: Bool, directory: String, job: String, tokenPath: String
    ) -> String {
        let workers = liveWorkers == 1
            ? "1 other worker of job \(job.debugDescription) writes" : "\(liveWorkers) other workers of job \(job.debugDescription) write"
        let why = tokenFound
            ? " (\(tokenPath) holds another directory's token)"
            // No token here: another directory, or this one with its token
            // file removed while they run (then none can join until they end).
            : ", or this directory's token file \(tokenPath) was removed or damaged while they run"
        return "\(workers) into another directory than \(directory)\(why): "
            + "every worker of a job needs the same -d, one shared directory (docs/scale-out.md). Give this worker their directory, "
            + "or start it once they have ended"
    }
}
