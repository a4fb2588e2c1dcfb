/// URLs as they may be printed: a `user:password@` part is replaced by `***@`,
/// so credentials never reach logs, events or error messages.
package enum RedactedURL {
    public static func text(_ url: String) -> String {
        // By bytes, as `PendingRule.hasUserPart` decides what is a user part:
        // every record the state writes passes here, and Foundation's
        // `range(of:)`, which compared by Unicode rules, was 2 % of a queue
        // worker's CPU.
        var url = url
        return url.withUTF8 { bytes -> String? in
            var index = 0
            while index + 2 < bytes.count, !(bytes[index] == 0x3A && bytes[index + 1] == 0x2F && bytes[index + 2] == 0x2F) {
                index += 1
            }
            guard index + 2 < bytes.count else { return nil }
            let authority = index + 3
            var at: Int?
            var cursor = authority
            scan: while cursor < bytes.count {
                switch bytes[cursor] {
                case 0x2F, 0x3F, 0x23: break scan  // "/", "?", "#": the authority ended
                case 0x40: at = cursor  // "@": the last one ends the user part
                default: break
                }
                cursor += 1
            }
            guard let at else { return nil }
            return String(decoding: bytes[..<authority], as: UTF8.self) + "***" + String(decoding: bytes[at...], as: UTF8.self)
        } ?? url
    }
}
