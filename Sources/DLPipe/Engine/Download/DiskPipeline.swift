/// The engine loop's way from a whole body to a named, durable file: the
/// transfers whose part files wait for a state commit, the files waiting
/// for their batch's sync, the batches syncing off the loop, the held
/// bodies' budget, and the queues that do that work. Engine thread only
/// (its queues' blocks capture Sendable values and the inbox, never this).
final class DiskPipeline {
    /// Transfers paused until this turn's state commit names their part files.
    var awaitingCommit: [Transfer] = []
    /// Checked files waiting for their data to be durable before they get their names.
    var awaitingDurability: [Placement] = []
    var durabilityBatchStarted = 0.0
    /// The batches whose sync runs now, by number, not on this thread: syncfs
    /// flushes every dirty page of the file system, other programs' too, and can
    /// take seconds on a busy disk. Transfers go on meanwhile. One at a time,
    /// except the run's last (see `placeDurableFiles`).
    var syncingBatches: [Int: [Placement]] = [:]
    var nextSyncBatch = 0
    /// A batch is never empty, so one is in flight exactly while this holds one.
    var syncInFlight: Bool { !syncingBatches.isEmpty }
    /// Whole files a shared queue's worker may not place yet (its lease is
    /// not surely held: `QueueParticipant.mayPlace`), tried again every half second; they
    /// keep their part files meanwhile.
    var fencedPlacements: [Placement] = []
    var fenceCheckDue = 0.0
    /// Whether large part files keep their descriptors for a per-file sync of
    /// their batch (`PartFileSync`): the descriptor limit has room for them.
    let keepsPartDescriptors: Bool
    /// Whether whole bodies in memory may skip the part file (`HeldFile`): the
    /// file system has unnamed files, and the descriptor limit has room.
    var holdsWholeBodies: Bool
    /// Bytes of held bodies not yet on disk; past `EngineLoop.maxHeldBytes`
    /// bodies take the part file path, so memory stays bounded whatever the
    /// file sizes.
    var heldBytes = 0
    /// When state records were last handed over for a commit (`flushState`).
    var lastStateCommit = 0.0
    let syncQueue = NamedQueue("dlpipe-sync")
    /// Per-file syncs of batches without held bodies: concurrent, so that the
    /// run's last batch need not wait for the one in flight.
    let fileSyncQueue = NamedQueue("dlpipe-fsync", concurrent: true)
    /// Hashes the bytes a resumed part file already holds (ResumeHash).
    let resumeHashQueue = NamedQueue("dlpipe-hash")

    init(holdsWholeBodies: Bool, keepsPartDescriptors: Bool) {
        self.holdsWholeBodies = holdsWholeBodies
        self.keepsPartDescriptors = keepsPartDescriptors
    }
}
