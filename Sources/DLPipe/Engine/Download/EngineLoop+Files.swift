/// The part file of a download. Its name and every change to the output
/// directory go through `targets` (the one owner of names).
extension EngineLoop {
    /// The job's part file: its own (a resume or a restart), or a new one. A new
    /// one is opened with O_EXCL: when another program took the name after the
    /// name index was read, the download moves to the next free name (its record
    /// first), and nothing of the other program's is truncated.
    func openNewOrOwnPart(_ job: Job, keeping offset: Int64, truncating: Bool = true) throws(DownloadError) -> PartFile {
        // The record naming the part file is on disk before the file: saved by
        // every caller, and committed here unless a commit took it already
        // (records are otherwise committed every 50 ms, and a hook's verdict can
        // come sooner).
        try commitStateBeforePart(of: job)
        let fresh = !job.partFileMayExist && offset == 0
        for _ in 0..<4 {
            guard let target = job.target else { break }
            if let file = try targets.openPart(target, keeping: offset, exclusive: fresh, truncating: truncating) {
                job.claim.partFile(mayExist: true)
                return file
            }
            // Another program has the name: read the folder again, take the next free one.
            targets.diskDisagreed(about: target)
            job.claim.move(to: targets.move(from: target, to: job.wantedTarget ?? target))
            saveState(job, .partial)
            try commitStateBeforePart(of: job)
        }
        throw DownloadError(.io, "no free name for \(job.target?.relative ?? "the file"): other programs keep taking them")
    }
}
