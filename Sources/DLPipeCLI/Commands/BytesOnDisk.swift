import DLPipe
import Foundation

/// What a partial download really has on disk. The state's `bytes` is written
/// when a record is saved, not as the body streams (that would be a commit per
/// chunk), so after a `kill -9` it says 0 while the part file holds much more;
/// the part file is what the next run resumes from.
enum BytesOnDisk {
    /// The records, with each partial one's bytes taken from the disk under `directory`.
    static func applied(to records: [DownloadRecord], in directory: String) -> [DownloadRecord] {
        records.map { record in
            guard record.status == .partial else { return record }
            var updated = record
            updated.bytes = partial(record, in: directory)
            return updated
        }
    }

    /// The part file's size; else, when the part file is gone but the file is
    /// whole under its name (killed between the rename and the record), its
    /// size, since the next run recognises it as finished; else 0.
    static func partial(_ record: DownloadRecord, in directory: String) -> Int64 {
        guard let target = record.target else { return 0 }
        let path = directory + "/" + target
        if let size = regularFileSize(path + ".part") { return size }
        if let size = regularFileSize(path), size == record.total { return size }
        return 0
    }

    /// The size of a regular file (symlinks are not followed), or nil.
    static func regularFileSize(_ path: String) -> Int64? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int64(info.st_size)
    }
}
