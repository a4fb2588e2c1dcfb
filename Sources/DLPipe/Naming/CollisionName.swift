/// Alternative names for when the wanted file already exists and dlpipe did not write it.
///
/// Expects an already sanitised name (see `SafeName`); variants stay within 255 UTF-8 bytes.
enum CollisionName {
    /// Compound extensions kept whole, so `a.tar.gz` becomes `a.1.tar.gz`, not `a.tar.1.gz`.
    static let compoundExtensions = [".tar.gz", ".tar.bz2", ".tar.xz", ".tar.zst", ".tar.lz"]

    /// `name` with `.index` inserted before its extension: `report.pdf`, 1 → `report.1.pdf`.
    static func variant(of name: String, index: Int) -> String {
        variant(of: name, tag: String(index))
    }

    /// Returns `name` if free, else its first free numbered variant from `start` on.
    ///
    /// `isTaken` receives the bare candidate name; callers join it with its folder themselves
    /// (the engine's rule, `TargetRegistry.isTaken`, also checks `.part` files and names held
    /// by other downloads). The numbers never run out, so a free name is always found: only
    /// finitely many names can be taken. A caller that names many downloads alike passes the
    /// number after the last one it took as `start` (`TargetRegistry` remembers it per name),
    /// so that naming n downloads costs O(n) probes, not O(n²). The answer is advisory: another
    /// process may create the file meanwhile, so callers must still create or rename
    /// exclusively (O_EXCL / no-clobber) and retry.
    static func firstFree(for name: String, from start: Int = 1, isTaken: (String) -> Bool) -> String {
        firstFreeNumbered(for: name, from: start, isTaken: isTaken).name
    }

    /// `firstFree` with the number it took: 0 for `name` itself.
    static func firstFreeNumbered(
        for name: String, from start: Int = 1, isTaken: (String) -> Bool
    ) -> (name: String, index: Int) {
        if !isTaken(name) { return (name, 0) }
        // Split once: the variants differ only in their number.
        let (stem, ext) = split(name)
        var index = max(start, 1)
        while true {
            let candidate = variant(stem: stem, ext: ext, tag: String(index))
            if !isTaken(candidate) { return (candidate, index) }
            index += 1
        }
    }

    /// The number of `candidate` when it is a numbered variant of `name`
    /// (`report.3.pdf` of `report.pdf` is 3); nil otherwise (`name` itself too).
    static func index(of candidate: String, asVariantOf name: String) -> Int? {
        let (_, ext) = split(name)
        // The number sits between the last dot before the extension and the extension.
        let bytes = candidate.utf8
        guard bytes.count > ext.utf8.count, bytes.suffix(ext.utf8.count).elementsEqual(ext.utf8) else { return nil }
        let body = bytes.dropLast(ext.utf8.count)
        guard let dot = body.lastIndex(of: 0x2E) else { return nil }
        let digits = body[body.index(after: dot)...]
        guard !digits.isEmpty, digits.count <= 18, digits.first != 0x30,
            digits.allSatisfy({ (0x30...0x39).contains($0) }),
            let index = Int(String(decoding: digits, as: UTF8.self))
        else { return nil }
        return variant(of: name, index: index) == candidate ? index : nil
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
        return variant(stem: stem, ext: ext, tag: tag)
    }

    private static func variant(stem: String, ext: String, tag: String) -> String {
        let suffix = (stem.isEmpty ? "" : ".") + tag + ext
        return SafeName.prefix(of: stem, maxBytes: SafeName.maxBytes - suffix.utf8.count) + suffix
    }
}
