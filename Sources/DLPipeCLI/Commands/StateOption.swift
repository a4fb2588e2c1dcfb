/// `--state FILE`, shared by `run`, `get`, `check` and `status`.
enum StateOption {
    /// Takes `--state` out of `args`. The value is a file; a URL (`postgres://...`)
    /// is refused, because it would otherwise become a folder named `postgres:`
    /// and the run would quietly use a local state. A database is the shared
    /// queue's business (SPEC 7), and that option is `--queue`.
    static func take(_ args: inout Arguments) throws -> String? {
        guard let value = try args.value("--state") else { return nil }
        if let scheme = urlScheme(value) {
            // Only the scheme is echoed: the rest may hold a password.
            throw UsageError(
                "--state takes a file, not a \(scheme):// URL; a shared queue in a database will be given with --queue URL",
                command: args.command)
        }
        return value
    }

    /// The scheme when `text` starts like a URL: `scheme://`, with a scheme of
    /// RFC 3986's characters (a letter, then letters, digits, `+`, `-`, `.`).
    static func urlScheme(_ text: String) -> String? {
        guard let range = text.range(of: "://") else { return nil }
        let scheme = text[..<range.lowerBound].utf8
        func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
        guard let first = scheme.first, isLetter(first),
            scheme.allSatisfy({ isLetter($0) || (0x30...0x39).contains($0) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E })
        else { return nil }
        return String(text[..<range.lowerBound])
    }
}
