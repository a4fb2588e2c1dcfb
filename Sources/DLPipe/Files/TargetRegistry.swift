/// The one owner of file names in the output directory: which names the disk
/// holds (`NameIndex`), which ones downloads of this run hold (the
/// reservations), the single rule that says a name is taken, how a part file
/// and a final file are named, and every change the engine makes to those
/// names on disk. The engine asks it and never edits its sets by hand.
///
/// A name is taken when a download holds it, or a file or a part file has it
/// on disk. That rule answers every choice of a new name: the first
/// response's, a hook's rename, and the next free name when the disk proved
/// the index wrong (another program created the name meanwhile: `EEXIST` from
/// an O_EXCL open or a no-clobber rename). Then the folder is read again
/// (`diskDisagreed`) and the same rule picks the next name.
///
/// The reservations sit behind `NameReservations`, an injected store, rather
/// than the whole registry behind a protocol: the disk side is the same for
/// every backend, and a second backend (a shared queue that reserves names in
/// its database) changes only who else may hold a name.
///
/// Engine thread only. One exception lives elsewhere: a held body whose name
/// was taken by the time the syncfs queue links it takes the next name the
/// disk says is free there (`HeldFile.link`), and the engine records it here
/// afterwards (`linked`).
final class TargetRegistry {
    /// The output directory, absolute and canonical.
    let root: String
    let output: OutputDirectory
    private let names: NameIndex
    private let reservations: any NameReservations
    /// Folders known to exist (created or checked in this run), relative.
    private var knownFolders: Set<String> = []
    /// Per wanted name (relative), the number after the last variant taken for
    /// it: every variant below was taken when last looked at, so the next
    /// search starts there. Without it, n downloads that want one name (the
    /// `download.php?id=N` of a long list) probed 1, 2, ... each: O(n²).
    /// A lower number that frees up later is simply not reused in this run.
    private var nextNumber: [String: Int] = [:]

    /// A shared queue's worker keeps its part files in a folder of its own
    /// (`ClaimedFiles`); nil: beside the final file.
    private let claims: ClaimedFiles?

    init(output: OutputDirectory, reservations: any NameReservations = LocalReservations(), claims: ClaimedFiles? = nil) {
        self.root = output.root
        self.output = output
        self.names = NameIndex(output: output)
        self.reservations = reservations
        self.claims = claims
    }

    // MARK: names

    /// The part file's name, relative: `NAME.part` beside the final file, or
    /// the worker's own one in its job's folder when it shares a queue.
    func partName(_ target: TargetPath) -> String {
        claims?.partName(of: target.relative) ?? target.relative + ".part"
    }
    func partPath(_ target: TargetPath) -> String { root + "/" + partName(target) }
    func finalPath(_ target: TargetPath) -> String { root + "/" + target.relative }

    /// The taken rule: a download holds the name, or a file or a part file has it.
    func isTaken(_ relative: String) -> Bool {
        reservations.isReserved(relative) || names.contains(relative) || names.contains(relative + ".part")
    }

    // MARK: reservations

    /// Holds `target` as it is (the name the state remembers for a re-run);
    /// false when another download of this run holds it.
    func reserveExactly(_ target: TargetPath) -> Bool {
        !reservations.isReserved(target.relative) && reservations.reserve(target.relative)
    }

    /// Holds `target` when a regular file of no download of this run is under
    /// that name (no part file beside it): a file to adopt, or to replace
    /// under `--overwrite`. Its facts; nil (and nothing held) otherwise.
    func reserveExistingFile(_ target: TargetPath) -> FileFacts? {
        let relative = target.relative
        guard !reservations.isReserved(relative), names.contains(relative), !names.contains(relative + ".part"),
            let facts = output.facts(relative), facts.isRegular, reservations.reserve(relative)
        else { return nil }
        return facts
    }

    /// `wanted`, or its first free variant (`name.1.ext`), now held. A name
    /// the caller holds already counts as taken: a move never lands on itself.
    func reserveFree(_ wanted: TargetPath) -> TargetPath {
        // A shared store may lose a race for the name it was told is free:
        // then the next free one is tried (bounded; the last answer stands).
        var target = wanted
        for _ in 0..<8 {
            target.name = firstFree(wanted) { isTaken($0) }
            if reservations.reserve(target.relative) { break }
        }
        return target
    }

    /// The first free name for `wanted` under `taken`, its numbered variants
    /// searched from the number after the last one taken for it.
    private func firstFree(_ wanted: TargetPath, taken: (String) -> Bool) -> String {
        let prefix = wanted.directory.isEmpty ? "" : wanted.directory + "/"
        let found = CollisionName.firstFreeNumbered(for: wanted.name, from: nextNumber[wanted.relative] ?? 1) {
            taken(prefix + $0)
        }
        if found.index > 0 { nextNumber[wanted.relative] = found.index + 1 }
        return found.name
    }

    /// A download leaves `old` for `wanted` (or its first free variant): the
    /// new name is held before the old one is let go.
    func move(from old: TargetPath?, to wanted: TargetPath) -> TargetPath {
        let target = reserveFree(wanted)
        if let old { reservations.release(old.relative) }
        return target
    }

    /// Where a finished download's file moves when a hook renames it:
    /// `wanted`, or its first free variant, now held; the download's own file
    /// (`current`) is no collision, so a re-run that asks for a taken name
    /// keeps the numbered name it had instead of swapping between `X.1` and
    /// `X.2`. `current` itself when that is the answer (nothing to move).
    func reserveMove(from current: TargetPath, to wanted: TargetPath) -> TargetPath {
        // Already under a numbered variant of the wanted name (and the name
        // itself is not free): it stays, without a search (which starts past
        // the variants other downloads took, so it may not meet this one).
        if current.directory == wanted.directory, current != wanted,
            CollisionName.index(of: current.name, asVariantOf: wanted.name) != nil, isTaken(wanted.relative)
        {
            return current
        }
        var target = wanted
        for _ in 0..<8 {
            target.name = firstFree(wanted) { relative in relative != current.relative && isTaken(relative) }
            if target == current || reservations.reserve(target.relative) { break }
        }
        return target
    }

    /// A finished download's file is dropped because `existing` holds the
    /// same bytes already: the download ends as that file, its own name is
    /// let go. (`existing` stays held by whichever download of this run holds
    /// it; otherwise by this one.)
    func drop(_ old: TargetPath, for existing: TargetPath) {
        output.remove(old.relative)
        names.remove(old.relative)
        reservations.release(old.relative)
        _ = reserveExactly(existing)
    }

    /// The download holding `target` ended (or never needs it).
    func release(_ target: TargetPath) {
        reservations.release(target.relative)
    }

    // MARK: the disk

    /// The disk showed a name the index did not know (EEXIST): the folder of
    /// `target` is read again when next asked, so that the taken rule sees
    /// what other programs created meanwhile.
    func diskDisagreed(about target: TargetPath) {
        names.forget(folder: target.directory)
    }

    /// A held body was linked under `final` (maybe another name than its
    /// target's, taken on the syncfs queue): the index and the hold follow.
    func linked(_ target: TargetPath, as final: TargetPath) {
        names.insert(final.relative)  // linked on the syncfs queue, which leaves the index to this thread
        if final != target {
            // The file is on disk under `final` already: the hold follows it
            // whatever the store says. A download that held the name too finds
            // the file there (O_EXCL) and moves on to the next name.
            _ = reservations.reserve(final.relative)
            reservations.release(target.relative)
        }
    }

    /// Removes a download's part file, if there is one.
    func removePart(_ target: TargetPath) {
        output.remove(partName(target))
        names.remove(partName(target))
    }

    /// Renames `from` to `to` (relative paths), never replacing a file unless
    /// `replacing`; the errno on failure.
    func rename(_ from: String, to: String, replacing: Bool = false) -> Int32? {
        let code = replacing ? output.replace(from, to) : output.moveNoClobber(from, to)
        if code == nil {
            names.remove(from)
            names.insert(to)
        }
        return code
    }

    /// Empties the target's part file, if there is one; the error, if any.
    func emptyPart(_ target: TargetPath) -> DownloadError? {
        guard let code = output.emptyPart(partName(target)) else { return nil }
        return FileErrors.io("cannot empty", output.absolute(partName(target)), errno: code)
    }

    /// Opens the target's part file (O_EXCL when `exclusive`); nil when the
    /// name exists (then taken: the caller moves to another name).
    func openPart(
        _ target: TargetPath, keeping offset: Int64, exclusive: Bool, truncating: Bool = true
    ) throws(DownloadError) -> PartFile? {
        let file = try output.openPart(partName(target), keeping: offset, exclusive: exclusive, truncating: truncating)
        names.insert(partName(target))  // on disk either way: ours now, or another program's
        return file
    }

    /// Makes the target's folder (mkdir -p) once per run; the error, if any.
    func ensureFolder(of target: TargetPath) -> DownloadError? {
        guard !target.directory.isEmpty, !knownFolders.contains(target.directory) else { return nil }
        let directory = root + "/" + target.directory
        if let code = FileSystem.makeDirectories(directory) {
            return FileErrors.io("cannot create directory", directory, errno: code)
        }
        knownFolders.insert(target.directory)
        names.insertFolders(target.directory)
        return nil
    }
}
