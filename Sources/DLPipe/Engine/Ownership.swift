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

    /// - Parameters:
    ///   - target: the record's target, relative to the output directory.
    ///   - found: size and inode of the file under `target`, if any.
    ///   - partExists: whether `target.part` is on disk.
    init(record: DownloadRecord, target: String, found: (size: Int64, inode: UInt64)?, partExists: Bool) {
        let placed = record.placed.flatMap { $0.path == target ? $0 : nil }
        placedHere = placed != nil
        foundFile = found.map { PlacedFile(path: target, size: $0.size, inode: $0.inode) }
        guard let found else {
            isPlacedFile = false
            validatorsFit = false
            ownsFile = false
            return
        }
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
}
