/// What a download holds of the output folder: the name it writes under, the
/// name it asked for, the file the state says it placed, whether it may
/// replace the file under its name, an adoption or a local change under way,
/// and the bytes of its part file worth resuming. Changed only through the
/// methods below, each named for the event that changes it, so that the
/// rules of what a download may replace and resume live here and not in
/// every place that learns something about the file (docs/design/engine-states.md).
struct FileClaim {
    /// Where the file goes, decided at the first response and kept across attempts.
    private(set) var target: TargetPath?
    /// The name the download asked for, when a collision numbered its
    /// target (`name.1.ext`). A numbered name that is taken meanwhile (by
    /// another worker of a shared queue, or another program) goes on to the
    /// next free variant of this one (`name.2.ext`), never to a variant of
    /// the numbered one (`name.1.1.ext`). Nil: the target is the wanted name.
    private(set) var wanted: TargetPath?
    /// The final file is one this engine (this run or an earlier one, per the
    /// state) wrote: it may be replaced.
    private(set) var ownsTarget = false
    /// The file the state says this download placed (an earlier run's, until
    /// this run places a new one): saved with every record, so that a run
    /// killed while replacing it leaves a state that still claims it.
    private(set) var placed: PlacedFile?
    /// A file the state does not know sits under the name this download
    /// would take: its first request asks whether it is current
    /// (`EngineLoop+Adoption`).
    private(set) var adoption: Adoption?
    /// The file the state placed for this download was changed by the user
    /// since: a new version goes beside it (unless `overwrite`), and says why.
    private(set) var localChange: LocalChange?
    /// Bytes kept in the part file from earlier attempts (the next Range start).
    private(set) var partBytes: Int64 = 0
    /// ETag or Last-Modified of the response the part file's bytes came from.
    private(set) var validator: String?
    /// A part file of this download may be on disk (an earlier run's, or an
    /// earlier attempt's): its body then goes through it, never held, so that
    /// no stale part file stays beside the final one.
    private(set) var partFileMayExist = false
    /// Validators of the file on disk, for If-None-Match / If-Modified-Since.
    private(set) var conditional: (etag: String?, lastModified: String?)?
    /// The SHA-256 the state recorded for the file on disk (reported on a 304).
    private(set) var knownSHA256: String?
    /// The media type of the file on disk: `f.type` when the file is kept (a
    /// 304 that names none, refresh "never").
    private(set) var knownType: String?

    /// The name to take the next free variant of when the target is taken.
    var wantedTarget: TargetPath? { wanted ?? target }

    // MARK: What the state knew

    /// The file the state says this download placed (nil: none, or it is gone).
    mutating func recall(placed file: PlacedFile?) { placed = file }

    /// The name the state recorded, taken again; `owning` when the file
    /// there (if any) may be replaced.
    mutating func take(_ name: TargetPath, owning: Bool) {
        target = name
        ownsTarget = owning
    }

    /// The name the state recorded, whose file the user changed since it was
    /// placed: a new version goes beside it.
    mutating func take(_ name: TargetPath, changedLocally change: LocalChange) {
        take(name, owning: false)
        localChange = change
    }

    /// What the state recorded of the file under the name it gave.
    mutating func recorded(sha256: String?, type: String?) {
        knownSHA256 = sha256
        knownType = type
    }

    /// The file on disk is asked for again only if it changed (its record's
    /// validators, or a 304's that proved it the server's).
    mutating func revalidate(etag: String?, lastModified: String?) { conditional = (etag, lastModified) }

    /// Under `verify`: the kept file's digest as it is now (f.sha256), and
    /// when it differs from the known one, no validators: the server sends
    /// the body even where it would answer 304.
    mutating func contentHashed(_ sha256: String?, differs: Bool) {
        if let sha256 { knownSHA256 = sha256 }
        if differs { conditional = nil }
    }

    /// A 304 that names a type names the current one.
    mutating func unchanged(type: String) { if !type.isEmpty { knownType = type } }

    /// A part file an earlier run left, resumed under If-Range `validator`.
    mutating func resume(partBytes bytes: Int64, validator tag: String?) {
        partBytes = bytes
        validator = tag
    }

    // MARK: Names

    /// The name the download asks for (a collision may number its target).
    mutating func ask(for name: TargetPath) { wanted = name }

    /// `--overwrite` found a file under the name asked for: the part file
    /// replaces it.
    mutating func overwriteFileThere() { ownsTarget = true }

    /// The same download's file under another name (the name was taken, a
    /// `finished` hook moved it, the placement numbered it).
    mutating func move(to name: TargetPath?) { target = name }

    /// A `response` hook named the file: this variant of it. A new name is
    /// never one this download wrote before.
    mutating func rename(to name: TargetPath) {
        target = name
        ownsTarget = false
    }

    // MARK: Adoption

    /// A file the state does not know is under `name`: held while the first
    /// request asks whether it is the server's.
    mutating func holdForAdoption(_ name: TargetPath, _ found: Adoption) {
        target = name
        adoption = found
    }

    /// The 304 proved the file the server's: it is this download's own now.
    mutating func adopt(placed file: PlacedFile) {
        adoption = nil
        ownsTarget = true
        placed = file
    }

    /// The file is not (or no longer shown to be) the server's: its name is let go.
    mutating func giveUpAdoption() {
        adoption = nil
        target = nil
    }

    // MARK: The file placed

    /// The file this download placed under its name, as it is now.
    mutating func place(_ file: PlacedFile) { placed = file }

    // MARK: The part file (what its bytes are worth)

    /// The part file holds `bytes` (written by a transfer, or found on disk).
    mutating func partHolds(_ bytes: Int64) { partBytes = bytes }

    /// The response the part file's bytes come from, by its validator.
    mutating func bytesFrom(validator tag: String?) { validator = tag }

    /// A part file under the name is on disk (found, or opened for this
    /// download), or not: a fresh one is then opened O_EXCL.
    mutating func partFile(mayExist: Bool) { partFileMayExist = mayExist }

    /// Nothing on disk to resume from: none was written, or it is gone.
    mutating func dropPart() { partBytes = 0 }

    /// Bytes without a validator cannot be resumed (no If-Range to guard
    /// them): they count as none, and the next attempt starts at zero.
    mutating func dropPartUnlessResumable() { if validator == nil { partBytes = 0 } }

    /// The bytes kept cannot be trusted (a range the server placed elsewhere,
    /// a part file that could not follow a rename): start from zero, with no
    /// validator to resume under.
    mutating func startOver() {
        partBytes = 0
        validator = nil
    }
}
