/// The engine's changes to the output directory. Each goes through `output`
/// (paths relative to the directory's descriptor) and keeps the name index
/// true, so that no caller updates `names` by hand.
extension EngineLoop {
    func partPath(_ target: TargetPath) -> String { root + "/" + partName(target) }
    func partName(_ target: TargetPath) -> String { target.relative + ".part" }
    func finalPath(_ target: TargetPath) -> String { root + "/" + target.relative }

    /// Removes a download's part file, if there is one.
    func removePart(_ target: TargetPath) {
        output.remove(partName(target))
        names.remove(partName(target))
    }

    /// Renames `from` to `to` (relative paths), never replacing a file unless
    /// `replacing`; the errno on failure.
    func move(_ from: String, to: String, replacing: Bool = false) -> Int32? {
        let code = replacing ? output.replace(from, to) : output.moveNoClobber(from, to)
        if code == nil {
            names.remove(from)
            names.insert(to)
        }
        return code
    }

    /// Makes the target's folder (mkdir -p) once per run; the error, if any.
    func ensureFolder(of target: TargetPath) -> DownloadError? {
        guard !target.directory.isEmpty else { return nil }
        let directory = root + "/" + target.directory
        if createdDirectories.contains(directory) { return nil }
        if let code = FileSystem.makeDirectories(directory) {
            return FileErrors.io("cannot create directory", directory, errno: code)
        }
        createdDirectories.insert(directory)
        names.insertFolders(target.directory)
        return nil
    }

    /// The job's part file: its own (a resume or a restart), or a new one. A new
    /// one is opened with O_EXCL: when another program took the name after the
    /// name index was read, the download moves to the next free name (its record
    /// first), and nothing of the other program's is truncated.
    func openNewOrOwnPart(_ job: Job, keeping offset: Int64) throws(DownloadError) -> PartFile {
        // The record naming the part file is on disk before the file: saved by
        // every caller, and committed here unless a commit took it already
        // (records are otherwise committed every 50 ms, and a hook's verdict can
        // come sooner).
        commitState()
        let fresh = !job.partFileMayExist && offset == 0
        for _ in 0..<4 {
            guard var target = job.target else { break }
            if let file = try output.openPart(partName(target), keeping: offset, exclusive: fresh) {
                job.partFileMayExist = true
                names.insert(partName(target))
                return file
            }
            names.insert(partName(target))
            reservedPaths.remove(target.relative)
            target.name = CollisionName.firstFree(for: target.name, in: target.directory) { candidate in
                let relative = target.directory.isEmpty ? candidate : target.directory + "/" + candidate
                return isTaken(relative) || output.exists(relative) || output.exists(relative + ".part")
            }
            reservedPaths.insert(target.relative)
            job.target = target
            saveState(job, .partial)
            commitState()
        }
        throw DownloadError(.io, "no free name for \(job.target?.relative ?? "the file"): other programs keep taking them")
    }
}
