/// What the state file keeps of a URL's `user:password@` part: never the
/// credentials themselves. A stored URL is the redacted one
/// (`***@`); a stored deduplication key replaces the user part with a keyed
/// SHA-256 of it, so that a re-run with the same credentials finds its record
/// and one with other credentials is another download, as before.
///
/// The key is 32 random bytes made when the state file is (`credential_key`
/// in `dlpipe_meta`): without it a leaked key could be matched against a
/// list of likely passwords hashed once for every state. Whoever can read the
/// state file can still try guesses against it, which is one reason the file
/// is the owner's alone (0600).
package struct StoredCredentials: Sendable {
    /// The per-state secret the digests are keyed with.
    package let secret: [UInt8]

    package init(secret: [UInt8]) { self.secret = secret }

    /// The key as stored: unchanged unless its URL carries a user part, whose
    /// place then takes `***~DIGEST`. The URL is the key's first part that
    /// holds `://`: the first part of a file's key, the second of a memory
    /// download's (`memory`, URL), a later one of a POST's (method, body
    /// digest, URL, ...). Only the first part was looked at before, which
    /// kept a POST's or a memory download's credentials in the key as they were.
    package func key(_ key: String) -> String {
        var start = key.startIndex
        while start < key.endIndex {
            let end = key[start...].firstIndex(of: "\u{0}") ?? key.endIndex
            let part = key[start..<end]
            if Self.hasScheme(part) {
                guard let user = Self.userPart(of: part) else { return key }
                return String(key[..<user.lowerBound]) + "***~" + digest(String(key[user])) + String(key[user.upperBound...])
            }
            start = end < key.endIndex ? key.index(after: end) : end
        }
        return key
    }

    /// The URL as stored: redacted.
    package func url(_ url: String) -> String { RedactedURL.text(url) }

    /// The first 128 bits of SHA-256(secret, 0, user part), hex: enough to
    /// tell credentials apart, and nothing of them.
    private func digest(_ user: String) -> String {
        let hasher = SHA256Hasher()
        secret.withUnsafeBytes { hasher.update($0) }
        [UInt8(0)].withUnsafeBytes { hasher.update($0) }
        Array(user.utf8).withUnsafeBytes { hasher.update($0) }
        return String(hasher.finalHex().prefix(32))
    }

    /// The range of `user[:password]` (without the `@`) in a URL's authority
    /// (`RedactedURL.userPart`).
    static func userPart(of url: Substring) -> Range<String.Index>? {
        var text = String(url)
        guard let offsets = text.withUTF8({ RedactedURL.userPart($0) }) else { return nil }
        let bytes = url.utf8
        return bytes.index(bytes.startIndex, offsetBy: offsets.lowerBound)..<bytes.index(bytes.startIndex, offsetBy: offsets.upperBound)
    }

    /// Whether a part of a key holds `://` (it is the key's URL).
    private static func hasScheme(_ part: Substring) -> Bool {
        var text = String(part)
        return text.withUTF8 { RedactedURL.afterScheme($0) != nil }
    }

    /// 32 random bytes, hex (the secret of a new state file).
    package static func newSecretHex() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in
            let byte = UInt8.random(in: .min ... .max, using: &generator)
            return (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
    }
}

extension StoredCredentials {
    /// The secret from its hex text.
    package init(hex: String) {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex), index != hex.endIndex {
            if let byte = UInt8(hex[index..<next], radix: 16) { bytes.append(byte) }
            index = next
        }
        secret = bytes
    }
}
