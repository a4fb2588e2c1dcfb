import Foundation

/// Blanking secrets in the process's arguments (`Arguments.secretValues`),
/// and which bytes of a value are secret.
///
/// The kernel shows a process's argv memory, as it is now, in
/// /proc/PID/cmdline and so in `ps`; `CommandLine.unsafeArgv` points into that
/// memory, so overwriting its bytes in place hides them from then on (as curl
/// does with spaces). Whatever was read before the parse (a `ps` in the first
/// milliseconds) is not undone: `--netrc-file` keeps a password off the
/// command line from the start.
enum ArgvSecret {
    /// Overwrites `bytes` of argv[index] with spaces, only if that argument
    /// still reads `expected` (so that a wrong index never damages another).
    static func blank(index: Int, expected: String, bytes: Range<Int>) {
        guard index > 0, index < Int(CommandLine.argc), let argument = CommandLine.unsafeArgv[index],
            String(cString: argument) == expected, bytes.lowerBound >= 0, bytes.upperBound <= strlen(argument)
        else { return }
        for offset in bytes { argument[offset] = 0x20 }
    }

    /// The whole value (`-u USER:PASSWORD`: a user name can be a token too).
    static func whole(_ value: String) -> Range<Int>? {
        value.isEmpty ? nil : 0..<value.utf8.count
    }

    /// The `user:password` of a URL (`scheme://user:password@host/...`, or
    /// `user:password@host:port` without a scheme, as curl takes a proxy).
    static func userinfo(_ value: String) -> Range<Int>? {
        let bytes = Array(value.utf8)
        var start = 0
        if let scheme = value.range(of: "://") { start = value.utf8.distance(from: value.startIndex, to: scheme.upperBound) }
        let end = bytes[start...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.count
        guard let at = bytes[start..<end].lastIndex(of: UInt8(ascii: "@")), at > start else { return nil }
        return start..<at
    }

    /// The value of an `-H` header that carries credentials (Authorization,
    /// Proxy-Authorization, Cookie); nil for any other header.
    static func credentialHeader(_ line: String) -> Range<Int>? {
        guard let colon = line.firstIndex(of: ":") else { return nil }
        let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
        guard ["authorization", "proxy-authorization", "cookie"].contains(name) else { return nil }
        let start = line.utf8.distance(from: line.startIndex, to: colon) + 1
        let count = line.utf8.count
        return start < count ? start..<count : nil
    }
}
