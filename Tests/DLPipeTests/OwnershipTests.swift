import Testing

@testable import DLPipe

/// Whose is the file under a recorded target, after each kind of kill of a
/// run that replaced it (docs/design/state.md, the crash table).
@Suite struct OwnershipTests {
    private func record(_ status: DownloadRecord.Status, bytes: Int64 = 0, total: Int64?, placed: PlacedFile?) -> DownloadRecord {
        DownloadRecord(
            key: "k", url: "http://h/f", target: "f", status: status, bytes: bytes, total: total, etag: "\"new\"",
            lastModified: nil, sha256: nil, mediaType: nil, attempts: 1, lastError: nil, updatedAt: 0, placed: placed)
    }

    @Test func aFinishedFileAtItsSizeIsCurrentAndOurs() {
        let o = Ownership(record: record(.finished, bytes: 10, total: 10, placed: PlacedFile(path: "f", size: 10)),
                          target: "f", found: (10, 7), partExists: false)
        #expect(o.validatorsFit && o.ownsFile && o.isPlacedFile)
        #expect(o.foundFile == PlacedFile(path: "f", size: 10, inode: 7))
    }

    /// Killed after the new response's record, before or while its part file
    /// filled: the old file is ours, its validators are not in the record.
    @Test func theOldFileOfAKilledReplacingRunIsOursButNotCurrent() {
        for newTotal: Int64 in [10, 20] {  // the same size, another size
            let o = Ownership(record: record(.partial, total: newTotal, placed: PlacedFile(path: "f", size: 10, inode: 7)),
                              target: "f", found: (10, 7), partExists: false)
            #expect(o.ownsFile && o.isPlacedFile && !o.validatorsFit, "new total \(newTotal)")
        }
    }

    /// Killed between the rename and the finished record: the new file (another
    /// inode, the recorded total) is whole and current.
    @Test func theNewFileRenamedInIsCurrent() {
        let o = Ownership(record: record(.partial, total: 10, placed: PlacedFile(path: "f", size: 10, inode: 7)),
                          target: "f", found: (10, 8), partExists: false)
        #expect(o.validatorsFit && o.ownsFile && !o.isPlacedFile)
    }

    @Test func aFileUnderANameTheStateNeverPlacedIsSomeoneElses() {
        let o = Ownership(record: record(.partial, total: 10, placed: PlacedFile(path: "other", size: 10, inode: 7)),
                          target: "f", found: (5, 7), partExists: true)
        #expect(!o.ownsFile && !o.validatorsFit && !o.placedHere)
        let failed = Ownership(record: record(.failed, total: 5, placed: nil), target: "f", found: (5, 1), partExists: false)
        #expect(!failed.ownsFile && !failed.validatorsFit)
    }

    @Test func nothingFoundOwnsNothing() {
        let o = Ownership(record: record(.finished, bytes: 10, total: 10, placed: PlacedFile(path: "f", size: 10)),
                          target: "f", found: nil, partExists: false)
        #expect(o.placedHere && !o.ownsFile && o.foundFile == nil)
    }

    /// A finished file the user changed since it was placed: another size, or
    /// (where the state knows the time it left) the same size and another
    /// time. Records without a time (before schema 7) tell a size only.
    @Test func aFinishedFileChangedSinceItWasPlacedIsTold() {
        let placed = PlacedFile(path: "f", size: 10, inode: 7, modified: 1_000_000_000_000_000_000)
        let same = Ownership(record: record(.finished, bytes: 10, total: 10, placed: placed),
                             target: "f", found: (10, 7), partExists: false, modified: placed.modified)
        #expect(same.changedLocally == nil && same.validatorsFit)
        let longer = Ownership(record: record(.finished, bytes: 10, total: 10, placed: placed),
                               target: "f", found: (12, 7), partExists: false, modified: placed.modified)
        #expect(longer.changedLocally == "its size was 10 bytes, now 12")
        let touched = Ownership(record: record(.finished, bytes: 10, total: 10, placed: placed),
                                target: "f", found: (10, 9), partExists: false, modified: 5)
        #expect(touched.changedLocally == "its modification time changed")
        let old = Ownership(record: record(.finished, bytes: 10, total: 10, placed: PlacedFile(path: "f", size: 10)),
                            target: "f", found: (10, 7), partExists: false, modified: 5)
        #expect(old.changedLocally == nil, "no time recorded: the same size counts as unchanged")
        // A replacing run killed after its rename: the new file is current, not a change of the user's.
        let killed = Ownership(record: record(.partial, total: 12, placed: placed),
                               target: "f", found: (12, 8), partExists: false, modified: 5)
        #expect(killed.changedLocally == nil && killed.validatorsFit)
        // Killed before its part file, the old file (its inode) changed by the user since.
        let edited = Ownership(record: record(.partial, total: 12, placed: placed),
                               target: "f", found: (11, 7), partExists: false, modified: 5)
        #expect(edited.changedLocally == "its size was 10 bytes, now 11")
    }
}
