/// The part files of a worker that shares a job through a queue
/// (docs/scale-out.md): its part files are its own.
///
/// Part files live in `folder` (relative to the output directory, one per
/// job), named by the worker and a digest of the final name: short whatever
/// the final name's length, so the 255-byte name limit never bites, and two
/// workers never write into one file. A worker that takes a download over
/// starts its own part file; it never resumes from another worker's. When it
/// may place a file is its `QueueParticipant`'s to say.
package struct ClaimedFiles: Sendable {
    /// The job's folder of part files, relative to the output directory.
    package let folder: String
    /// This worker's id in the queue: its part files start with `w<id>-`.
    package let worker: Int64

    package init(folder: String, worker: Int64) {
        self.folder = folder
        self.worker = worker
    }

    /// The part file of the final name `relative`.
    func partName(of relative: String) -> String {
        let digest = FileDigest.sha256Hex(of: Array(relative.utf8)).prefix(20)
        return "\(folder)/\(Self.prefix(worker))\(digest).part"
    }

    /// What every part file of `worker` starts with.
    package static func prefix(_ worker: Int64) -> String { "w\(worker)-" }

    /// The worker whose part file `name` is (a file name in the folder).
    package static func worker(ofPart name: String) -> Int64? {
        guard name.hasPrefix("w"), name.hasSuffix(".part"), let dash = name.firstIndex(of: "-") else { return nil }
        return Int64(name[name.index(after: name.startIndex)..<dash])
    }
}
