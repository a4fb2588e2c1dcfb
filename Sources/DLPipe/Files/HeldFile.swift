internal import CPosix
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A small download whose whole body arrived in memory before its part file
/// was due. It never gets a part file: the syncfs queue writes it into an
/// unnamed file (O_TMPFILE), makes it durable with the rest of its batch, and
/// only then links it under its final name, never replacing a file.
///
/// Nothing of it is visible on disk before the link, and an unnamed file
/// vanishes with a killed process, so it needs no state record before it
/// exists: one record (finished) instead of two, and the engine thread makes
/// none of its file system calls.
final class HeldFile: Sendable {
    /// The directory relative to the output directory ("" for the top).
    let directory: String
    /// The wanted name; a file that appeared under it meanwhile is never
    /// replaced (the next free name is taken).
    let name: String
    /// The name the download asked for before a collision numbered `name`
    /// (`name` itself when none did): a taken `name` goes on to the next
    /// free variant of this one (`a.2.bin` after `a.1.bin`, not `a.1.1.bin`).
    let wanted: String
    let bytes: [UInt8]
    private let stage = Mutex(Stage.pending)

    enum Stage: Sendable, Equatable {
        case pending
        /// The engine took it back (paused, cancelled) before the link.
        case withdrawn
        /// Linked under this name (relative to the directory).
        case linked(String)
        /// Unnamed files or linking them are not possible here: the engine
        /// writes it the usual way.
        case unsupported
        /// The disk refused: what, and errno.
        case failed(String, Int32)
        /// A shared queue's worker whose lease was not sure when its turn to
        /// be linked came (`mayPlace` said no): not linked. The engine writes
        /// it as a part file, whose rename waits for the fence like any other.
        case fenced
        /// Its record could not be committed, so it must not get a name (a
        /// file on disk always has a record naming it): the state's message.
        case notRecorded(String)
    }

    init(directory: String, name: String, wanted: String? = nil, bytes: [UInt8]) {
        self.directory = directory
        self.name = name
        self.wanted = wanted ?? name
        self.bytes = bytes
    }

    var current: Stage { stage.withLock { $0 } }

    /// Takes the file back before it is linked; false when it already has a name
    /// (it is on disk under its final name: too late to pause or cancel).
    func withdraw() -> Bool {
        stage.withLock { stage in
            if case .linked = stage { return false }
            stage = .withdrawn
            return true
        }
    }

    fileprivate func settle(_ outcome: Stage) {
        stage.withLock { if $0 == .pending { $0 = outcome } }
    }

    /// The path of a name in this file's directory, relative to the output directory.
    fileprivate func relative(_ candidate: String) -> String {
        directory.isEmpty ? candidate : directory + "/" + candidate
    }

    // MARK: the syncfs queue's side

    /// Settles files whose records failed to commit: `place` then skips them.
    static func refuse(_ files: [HeldFile], because message: String) {
        for file in files { file.settle(.notRecorded(message)) }
    }

    /// Whether this output directory can hold unnamed files that are linked
    /// later, and the descriptor limit leaves room for a batch of them open
    /// across one syncfs.
    static func supported(in output: OutputDirectory) -> Bool {
        // Linking needs /proc/self/fd unless the process may use AT_EMPTY_PATH
        // (a privilege most users lack; see dl_link_descriptor).
        guard output.descriptor >= 0, DescriptorBudget.limit() >= 1024, access("/proc/self/fd", F_OK) == 0
        else { return false }
        let probe = dl_open_unnamed(output.descriptor, ".", 0o600)
        guard probe >= 0 else { return false }
        close(probe)
        return true
    }

    /// How many unnamed files may be open at once: a larger batch is written,
    /// synced and linked in slices of this size, one syncfs each. Half the
    /// descriptors left under the limit (the other half stays for transfers
    /// that start meanwhile, and a little for the rest of the run), between
    /// 64 and 1,024. A fixed 64 gave a batch of 350 small files six syncfs
    /// where one would do: each syncfs walks the whole file system's dirty
    /// inodes, and one worker of the queue bench spent about 0.2 s of CPU on
    /// the extra ones per 10,000 files.
    /// `supported` asks for a limit of 1,024, which leaves room for 400 and more.
    static func sliceSize(limit: Int, inUse: Int) -> Int {
        min(1024, max(64, (limit - inUse - 64) / 2))
    }

    /// Writes, syncs and links a batch (on the syncfs queue); each file's
    /// stage says how it ended. `syncAnyway` syncs even when no file is held
    /// (the batch's part files need it too). `refusingLinks` (tests) fails
    /// every link as a file system without them would. `mayPlace` (a shared
    /// queue's worker: its lease surely holds) is asked right before each
    /// link, as `placeFile` asks before each rename. `beforeLinking` runs
    /// once, after the first slice's syncfs and before any link: it may
    /// `refuse` the files (their records did not commit).
    static func place(
        _ files: [HeldFile], in output: OutputDirectory, syncAnyway: Bool, refusingLinks: Bool = false,
        mayPlace: (@Sendable () -> Bool)? = nil, sliceSize: Int? = nil, beforeLinking: (() -> Void)? = nil
    ) {
        var beforeLinking = beforeLinking
        // Run even when no slice ran it (no file to link): the caller's next
        // step (the batch's `.synced`) always comes after it, as with links.
        defer { beforeLinking?() }
        if files.isEmpty {
            if syncAnyway { output.sync() }
            return
        }
        // The descriptors are counted only when the batch needs more than one slice of the least size.
        let sliceSize = sliceSize ?? (files.count <= 64 ? 64
            : Self.sliceSize(limit: DescriptorBudget.limit(), inUse: DescriptorBudget.inUse()))
        var start = 0
        while start < files.count {
            let slice = files[start..<min(start + sliceSize, files.count)]
            start += sliceSize
            var open: [(HeldFile, Int32)] = []
            for file in slice where file.current == .pending {
                let descriptor = write(file, in: output)
                if descriptor >= 0 { open.append((file, descriptor)) }
            }
            // The bytes reach the disk before any name does (and the part files
            // of the batch with them).
            output.sync()
            beforeLinking?()
            beforeLinking = nil
            for (file, descriptor) in open {
                if refusingLinks {
                    file.settle(.unsupported)
                } else {
                    link(file, descriptor, in: output, mayPlace: mayPlace)
                }
                close(descriptor)
            }
        }
    }

    /// The file's bytes in a new unnamed file; its descriptor, or -1 with the
    /// file's stage settled.
    private static func write(_ file: HeldFile, in output: OutputDirectory) -> Int32 {
        let descriptor = dl_open_unnamed(output.descriptor, file.directory.isEmpty ? "." : file.directory, 0o644)
        guard descriptor >= 0 else {
            let code = errno
            let unsupported = code == EOPNOTSUPP || code == EISDIR || code == EINVAL
            file.settle(unsupported ? .unsupported : .failed("cannot create", code))
            return -1
        }
        guard file.bytes.withUnsafeBytes({ FileSystem.writeAll(descriptor, $0) }) else {
            file.settle(.failed("cannot write", errno))
            close(descriptor)
            return -1
        }
        return descriptor
    }

    /// Links a written file under its name, or the first free one, unless the
    /// engine withdrew it meanwhile, or the lease is not sure (`mayPlace`).
    private static func link(
        _ file: HeldFile, _ descriptor: Int32, in output: OutputDirectory, mayPlace: (@Sendable () -> Bool)?
    ) {
        file.stage.withLock { stage in
            guard stage == .pending else { return }
            // The fence: a worker whose lease may have run out names nothing
            // (another worker may hold this download now).
            if let mayPlace, !mayPlace() {
                stage = .fenced
                return
            }
            var name = file.name
            // Each retry searches on from the number after the last one tried,
            // so a crowded folder costs one pass, not one per retry.
            var next = CollisionName.index(of: file.name, asVariantOf: file.wanted).map { $0 + 1 } ?? 1
            while dl_link_descriptor(descriptor, output.descriptor, file.relative(name)) != 0 {
                let code = errno
                guard code == EEXIST else {
                    // EPERM or EXDEV: linking is refused here; the engine writes it
                    // the usual way. Anything else is the disk's answer.
                    stage = code == EPERM || code == EXDEV || code == EOPNOTSUPP ? .unsupported : .failed("cannot link", code)
                    return
                }
                // A worker whose lease went unsure meanwhile met the name taken:
                // most likely by the worker that took the download over. The
                // part file path decides (it drops this copy when the name is
                // still taken then, as `placeFile` does).
                if let mayPlace, !mayPlace() {
                    stage = .fenced
                    return
                }
                // Someone else took the name meanwhile: never clobber, take the next.
                let found = CollisionName.firstFreeNumbered(for: file.wanted, from: next) {
                    output.exists(file.relative($0))
                }
                name = found.name
                next = found.index + 1
            }
            stage = .linked(name)
        }
    }
}
