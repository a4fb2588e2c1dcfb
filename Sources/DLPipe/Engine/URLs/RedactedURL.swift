/// URLs as they may be printed: a `user:password@` part is replaced by `***@`,
/// so credentials never reach logs, events or error messages.
package enum RedactedURL {
    public static func text(_ url: String) -> String {
        var url = url
        return url.withUTF8 { bytes -> String? in
            guard let user = userPart(bytes) else { return nil }
            return String(decoding: bytes[..<user.lowerBound], as: UTF8.self) + "***"
                + String(decoding: bytes[user.upperBound...], as: UTF8.self)
        } ?? url
    }

    /// The byte offsets of a URL's `user[:password]` part (without its `@`):
    /// from just after the first `://` to the authority's last `@`, the
    /// authority ending at the first `/`, `?` or `#`. Nil when there is none.
    /// The one rule for what is a user part: redaction (`text`), the state's
    /// keys (`StoredCredentials`) and the requests that keep a secret
    /// (`PendingRule.hasUserPart`) all ask here. On bytes: every record
    /// written passes here, and Foundation's `range(of:)`, which compares by
    /// Unicode rules, was 3 % of a queue worker's CPU.
    static func userPart(_ bytes: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
        guard let authority = afterScheme(bytes) else { return nil }
        var at: Int?
        scan: for index in authority..<bytes.count {
            switch bytes[index] {
            case 0x2F, 0x3F, 0x23: break scan  // "/", "?", "#": the authority ended
            case 0x40: at = index  // "@": the last one ends the user part
            default: continue
            }
        }
        return at.map { authority..<$0 }
    }

    /// The offset just after the first `://`; nil when there is none.
    static func afterScheme(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = 0
        while index + 2 < bytes.count {
            if bytes[index] == 0x3A && bytes[index + 1] == 0x2F && bytes[index + 2] == 0x2F { return index + 3 }
            index += 1
        }
        return nil
    }
}
