/// Whose is the file under a download's recorded target, and whether the
/// record's validators describe it: read from the state's record and one stat
/// of the file, so that a run killed while it replaced the file (its record
/// `partial`, holding the new response's facts) still knows the file as its own.
struct Ownership {
    /// The state placed a file under this very name.
    let placedHere: Bool
    /// The file there is the one the state placed: the same inode once a run
    /// has seen it, else the same size.
    let isPlacedFile: Bool
    /// The file there is whole, and the record's validators and total describe
    /// it: finished at the recorded size, or a part file renamed into place
    /// whose finished record a kill lost (no part file, the recorded total, not
    /// the file placed before).
    let validatorsFit: Bool
    /// The file there may be replaced: this download finished there, or the
    /// state placed it. Anything else under the name is someone else's.
    let ownsFile: Bool
    /// The file found, as the state remembers it from now on.
    let foundFile: PlacedFile?
    /// A finished download's file is no longer what dlpipe placed: another
    /// size, or (when the state knows it, schema 7) another modification
    /// time. The user changed it; it is never replaced unless asked
    /// (`--overwrite`). Nil when unchanged, else what changed, for the warning.
    let changedLocally: String?

    /// - Parameters:
    ///   - target: the record's target, relative to the output directory.
    ///   - found: size and inode of the file under `target`, if any.
    ///   - partExists: whether `target.part` is on disk.
    ///   - modified: the found file's modification time (nanoseconds), if known.
    init(record: DownloadRecord, target: String, found: (size: Int64, inode: UInt64)?, partExists: Bool, modified: Int64? = nil) {
        let placed = record.placed.flatMap { $0.path == target ? $0 : nil }
        placedHere = placed != nil
        foundFile = found.map { PlacedFile(path: target, size: $0.size, inode: $0.inode, modified: modified) }
        guard let found else {
            isPlacedFile = false
            validatorsFit = false
            ownsFile = false
            changedLocally = nil
            return
        }
        // The placed file itself: a finished record's, or the old file of a
        // replacing run killed before its part file (the same inode).
        let isOldFile = record.status == .finished
            || (record.status == .partial && placed?.inode != nil && placed?.inode == found.inode)
        changedLocally = isOldFile ? placed.flatMap { Ownership.change(from: $0, to: found.size, modified) } : nil
        isPlacedFile = placed.map { placed in placed.inode.map { $0 == found.inode } ?? (placed.size == found.size) } ?? false
        switch record.status {
        case .finished:
            validatorsFit = found.size == record.bytes
        case .partial:
            // With no inode to tell them apart, a file of the placed size is
            // taken for the old one: at worst it is fetched once more.
            validatorsFit = !partExists && found.size == record.total && !isPlacedFile
        case .failed, .handled, .cancelled, .skipped:
            validatorsFit = false
        }
        ownsFile = record.status == .finished || placedHere
    }

    /// What differs between the placed file and the one found, if anything.
    private static func change(from placed: PlacedFile, to size: Int64, _ modified: Int64?) -> String? {
        if size != placed.size { return "its size was \(placed.size) bytes, now \(size)" }
        if let then = placed.modified, let now = modified, then != now { return "its modification time changed" }
        return nil
    }
}
