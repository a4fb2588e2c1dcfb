import Foundation

/// Reduces untrusted names (from headers or URLs) to one safe file-name component.
///
/// Guarantees for every non-nil result: no `/`, `\`, NUL or control characters, no bidi or
/// invisible format characters, not `.` or `..`, no leading dot, at most 255 UTF-8 bytes, NFC.
/// It is a pure function, so the same input always yields the same output.
package enum SafeName {
    /// Largest file name, in bytes, that common Linux filesystems (ext4, xfs, btrfs) accept.
    static let maxBytes = 250
    /// Extensions longer than this are not preserved when shortening (they are probably not extensions).
    static let maxExtensionBytes = 16

    /// Returns a safe base name for `raw`, or nil when nothing usable is left.
    public static func sanitize(_ raw: String) -> String? {
        isPlainASCII(raw) ? raw : sanitizeFully(raw)
    }

    /// A script's text (a title, a header) as one name, for `dl.safename`:
    /// each `/` and `\` becomes `_`, so every part of "AC/DC: Live" stays in
    /// the name, and each run of line breaks and tabs becomes one space (a
    /// title over two lines keeps its words apart), then `sanitize`'s rules
    /// apply. A server's name keeps `sanitize`'s own rule (its last component
    /// only): there a slash is a path, here it is part of a title.
    public static func sanitizeTitle(_ raw: String) -> String? {
        let bytes = raw.utf8
        let isBreak = { (byte: UInt8) in (0x09...0x0D).contains(byte) }
        guard bytes.contains(where: { $0 == 0x2F || $0 == 0x5C || isBreak($0) }) else { return sanitize(raw) }
        // Bounded first (the parts a name can keep), so a huge title is not
        // copied whole; byte for byte, as the separators and breaks are ASCII.
        var out: [UInt8] = []
        var inBreak = false
        for byte in bounded(Substring(raw)).utf8 {
            if isBreak(byte) {
                if !inBreak { out.append(0x20) }
                inBreak = true
                continue
            }
            inBreak = false
            out.append(byte == 0x2F || byte == 0x5C ? 0x5F : byte)
        }
        return sanitize(String(decoding: out, as: UTF8.self))
    }

    /// `sanitize` without the shortcut for names that are fine as they are.
    ///
    /// Linear in the text and bounded: only the last path component is
    /// cleaned, and of one longer than `maxCleanedBytes` only its first and
    /// last halves of that (the name keeps at most 250 bytes, from its start
    /// and its extension). Every step works on scalars or bytes: Foundation's
    /// normaliser and `Character` walks cost O(n²) on text with long runs of
    /// combining marks (400,000 `a` + U+0301 took 5 s).
    static func sanitizeFully(_ raw: String) -> String? {
        // Last component first, so no directory part (Unix or Windows style) can ever survive.
        let bytes = raw.utf8
        let tail = bytes.lastIndex(where: { $0 == 0x2F || $0 == 0x5C })
            .map { Substring(raw[bytes.index(after: $0)...]) } ?? Substring(raw)
        var kept = String.UnicodeScalarView()
        kept.append(contentsOf: bounded(tail).unicodeScalars.lazy.filter { !isRemoved($0) })
        // NFC so "é" and "e\u{301}" map to the same bytes on disk. It runs after removal because
        // removing e.g. U+200B between "e" and U+0301 makes a new, unnormalised sequence.
        let plain = String(kept)
        // ASCII is already NFC: skip the normaliser on the common path. The
        // standard library's normaliser is linear (Foundation's is not), and
        // right where Foundation's is not: U+AC00 U+11A8 is U+AC01 in NFC.
        let normalized = plain.utf8.allSatisfy { $0 < 0x80 } ? plain : String(decoding: plain._nfcCodeUnits, as: UTF8.self)
        // Trimming after removal, so hidden characters cannot shield a leading dot or space.
        let name = trimmedEnds(normalized, leadingDots: true)
        guard !name.isEmpty, name != ".", name != ".." else { return nil }
        return fitted(name)
    }

    /// Text longer than this is cleaned as its first and last halves of it.
    static let maxCleanedBytes = 65_536

    /// `text`, or its first and last `maxCleanedBytes / 2` bytes (cut at
    /// scalar boundaries) when it is longer: the parts a name can keep, with
    /// room for what trimming and removal take away at either end.
    private static func bounded(_ text: Substring) -> Substring {
        let bytes = text.utf8
        guard bytes.count > maxCleanedBytes else { return text }
        let half = maxCleanedBytes / 2
        var headEnd = bytes.index(bytes.startIndex, offsetBy: half)
        while headEnd > bytes.startIndex, isContinuation(bytes[headEnd]) { headEnd = bytes.index(before: headEnd) }
        var tailStart = bytes.index(bytes.endIndex, offsetBy: -half)
        while tailStart < bytes.endIndex, isContinuation(bytes[tailStart]) { tailStart = bytes.index(after: tailStart) }
        return Substring(String(text[..<headEnd]) + String(text[tailStart...]))
    }

    private static func isContinuation(_ byte: UInt8) -> Bool { byte & 0xC0 == 0x80 }

    /// Whether `raw` is already what `sanitize` would make of it, by the bytes
    /// alone: printable ASCII without `/` or `\`, not starting with a dot or a
    /// space, not ending with either, and short enough. Most names are; the
    /// full path below (scalars, Unicode properties, trimming) cost several
    /// microseconds per download.
    static func isPlainASCII(_ raw: String) -> Bool {
        let bytes = raw.utf8
        guard let first = bytes.first, let last = bytes.last, bytes.count <= maxBytes,
            first != 0x2E, first != 0x20, last != 0x2E, last != 0x20
        else { return false }
        return bytes.allSatisfy { (0x20...0x7E).contains($0) && $0 != 0x2F && $0 != 0x5C }
    }

    /// True for characters that are never allowed: controls, bidi overrides, invisible format chars.
    static func isRemoved(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x20...0x7E: false                                 // printable ASCII: no property lookup
        case 0x00...0x1F, 0x7F...0x9F: true                    // C0, DEL, C1 (ESC, NEL, CSI...)
        case 0x2028, 0x2029: true                               // line/paragraph separators break log lines
        // Format characters that render as nothing: bidi controls (U+202E...), zero-width ones
        // (U+200B...U+200D, U+2060), the BOM, and also the soft hyphen, invisible operators and
        // tag characters. A hand-written list missed U+00AD (byte 0xAD of a Latin-1 header,
        // found by fuzzing), so ask Unicode: general category Cf and Default_Ignorable.
        default: scalar.properties.generalCategory == .format && scalar.properties.isDefaultIgnorableCodePoint
        }
    }

    /// Shortens `name` to `maxBytes`, keeping a short extension; returns it unchanged if it fits.
    static func fitted(_ name: String) -> String {
        guard name.utf8.count > maxBytes else { return name }
        var stem = name
        var ext = ""
        // The last dot, by bytes (a `Character` walk from the end is O(n²) in
        // a long run of combining marks); it starts an extension only when it
        // is a character of its own, not the base of a combining mark.
        let bytes = name.utf8
        if let dot = bytes.lastIndex(of: 0x2E), dot != bytes.startIndex {
            let candidate = name[bytes.index(after: dot)...]
            if !candidate.isEmpty, candidate.utf8.count <= maxExtensionBytes, name[dot...].first == "." {
                stem = String(name[..<dot])
                ext = "." + candidate
            }
        }
        let short = trimmedEnds(prefix(of: stem, maxBytes: maxBytes - ext.utf8.count), leadingDots: false)
        return short + ext
    }

    /// The longest prefix of `text` within `maxBytes` UTF-8 bytes, cut at a Character boundary.
    ///
    /// Falls back to a Unicode-scalar boundary when the first Character alone is too big
    /// (e.g. a base letter with hundreds of combining marks), so the result is never empty
    /// unless `maxBytes` is below 4. Characters are only formed within the first
    /// `maxBytes` bytes and one scalar more (what decides where the last one that fits
    /// ends): a huge first Character costs no more than a short one.
    static func prefix(of text: String, maxBytes: Int) -> String {
        guard text.utf8.count > maxBytes else { return text }
        var window = String.UnicodeScalarView()
        var size = 0
        for scalar in text.unicodeScalars {
            window.append(scalar)
            size += UTF8.width(scalar)
            if size > maxBytes { break }
        }
        var out = ""
        var used = 0
        for character in String(window) {
            let size = character.utf8.count
            if used + size > maxBytes { break }
            out.append(character)
            used += size
        }
        if !out.isEmpty { return out }
        var view = String.UnicodeScalarView()
        for scalar in window {
            let size = UTF8.width(scalar)
            if used + size > maxBytes { break }
            view.append(scalar)
            used += size
        }
        return String(view)
    }

    /// Trims whitespace and dots at the end, whitespace at the start, and leading dots if asked.
    private static func trimmedEnds(_ text: String, leadingDots: Bool) -> String {
        let scalars = Array(text.unicodeScalars)
        let isTrimmed: (Unicode.Scalar) -> Bool = { $0.properties.isWhitespace || $0 == "." }
        let isLeadTrimmed: (Unicode.Scalar) -> Bool = leadingDots ? isTrimmed : { $0.properties.isWhitespace }
        guard let first = scalars.firstIndex(where: { !isLeadTrimmed($0) }),
              let last = scalars.lastIndex(where: { !isTrimmed($0) }), first <= last else { return "" }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars[first...last])
        return String(view)
    }
}
