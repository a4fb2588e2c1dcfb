/// Alternative names for when the wanted file already exists and dlpipe did not write it.
///
/// Expects an already sanitised name (see `SafeName`); variants stay within 255 UTF-8 bytes.
enum CollisionName {
    /// Compound extensions kept whole, so `a.tar.gz` becomes `a.1.tar.gz`, not `a.tar.1.gz`.
    static let compoundExtensions = [".tar.gz", ".tar.bz2", ".tar.xz", ".tar.zst", ".tar.lz"]
    /// How many numbered variants `firstFree` tries before switching to hashed ones.
    static let maxIndex = 10_000
    /// How many hashed variants `firstFree` tries once the numbered ones are exhausted.
    static let maxHashAttempts = 100

    /// `name` with `.index` inserted before its extension: `report.pdf`, 1 → `report.1.pdf`.
    static func variant(of name: String, index: Int) -> String {
        variant(of: name, tag: String(index))
    }

    /// Returns `name` if free, else the first free variant 1...10,000, else a hashed variant.
    ///
    /// `isTaken` receives the bare candidate name; callers join it with its folder themselves
    /// (the engine's rule, `TargetRegistry.isTaken`, also checks `.part` files and names held
    /// by other downloads). After 10,000 numbered variants it tries up to
    /// 100 variants tagged with 8 hex digits of an FNV-1a hash of (name, attempt): deterministic,
    /// no randomness. If even those are taken it returns the last one anyway. The answer is
    /// advisory: another process may create the file meanwhile, so callers must still create
    /// or rename exclusively (O_EXCL / no-clobber) and retry.
    static func firstFree(for name: String, isTaken: (String) -> Bool) -> String {
        if !isTaken(name) { return name }
        for index in 1...maxIndex {
            let candidate = variant(of: name, index: index)
            if !isTaken(candidate) { return candidate }
        }
        var candidate = name
        for attempt in 0..<maxHashAttempts {
            candidate = variant(of: name, tag: hashTag(of: name, attempt: attempt))
            if !isTaken(candidate) { return candidate }
        }
        return candidate
    }

    /// Splits `name` into stem and extension (with its dot; empty if none).
    ///
    /// A compound `.tar.*` extension wins; otherwise the part after the last dot counts as an
    /// extension only if it is at most 16 bytes without whitespace, so that `Mr. Smith` and
    /// `notes.about a long topic` are treated as having no extension.
    static func split(_ name: String) -> (stem: String, ext: String) {
        let bytes = Array(name.utf8)
        for ext in compoundExtensions where bytes.count > ext.utf8.count {
            // ASCII-only lowercase compare: the suffix is ASCII, so cutting bytes keeps valid UTF-8.
            let tail = bytes.suffix(ext.utf8.count).map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }
            if tail == Array(ext.utf8) {
                let cut = bytes.count - ext.utf8.count
                return (String(decoding: bytes[..<cut], as: UTF8.self),
                        String(decoding: bytes[cut...], as: UTF8.self))
            }
        }
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return (name, "") }
        let ext = name[name.index(after: dot)...]
        guard !ext.isEmpty, ext.utf8.count <= SafeName.maxExtensionBytes,
              !ext.contains(where: \.isWhitespace) else { return (name, "") }
        return (String(name[..<dot]), String(name[dot...]))
    }

    /// Inserts `.tag` before the extension, shortening the stem to stay within 255 bytes.
    private static func variant(of name: String, tag: String) -> String {
        let (stem, ext) = split(name)
        let suffix = (stem.isEmpty ? "" : ".") + tag + ext
        return SafeName.prefix(of: stem, maxBytes: SafeName.maxBytes - suffix.utf8.count) + suffix
    }

    /// 8 hex digits of a 64-bit FNV-1a hash of `name`, a NUL and `attempt` (stable across runs,
    /// unlike `Hasher`, which is randomly seeded per process).
    private static func hashTag(of name: String, attempt: Int) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in Array(name.utf8) + [0] + Array(String(attempt).utf8) {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash >> 32, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }
}
