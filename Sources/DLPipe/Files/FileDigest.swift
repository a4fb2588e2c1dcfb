/// File digests for callers outside the engine (hooks asking for `f.sha256`).
package enum FileDigest {
    /// The lower-case hex SHA-256 of a file, or nil when it cannot be read.
    public static func sha256Hex(ofFile path: String) -> String? {
        SHA256Hasher.hexDigest(ofFile: path)
    }

    /// The lower-case hex SHA-256 of `bytes` (`dl.sha256`).
    public static func sha256Hex(of bytes: [UInt8]) -> String {
        let hasher = SHA256Hasher()
        bytes.withUnsafeBytes { hasher.update($0) }
        return hasher.finalHex()
    }

    /// The lower-case hex SHA-256 of what can be read from `descriptor` (from
    /// where it stands to its end), or nil on a read error. For a file that was
    /// opened and checked once: the digest is of what was checked.
    public static func sha256Hex(ofDescriptor descriptor: Int32) -> String? {
        let hasher = SHA256Hasher()
        guard hasher.feed(descriptor: descriptor, upTo: .max) != nil else { return nil }
        return hasher.finalHex()
    }
}
