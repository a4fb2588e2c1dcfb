import DLPipe
internal import CPostgres
import Foundation

/// Where the shared queue lives: a `postgresql://` (or `postgres://`) URL, or
/// libpq's `key=value` form, checked by libpq's own parser before any
/// connection is tried, so that a malformed `--queue` is a usage error and
/// not a "database down". A unix socket is a URL whose host is a directory:
/// `postgresql:///db?host=/run/postgresql`.
package struct PostgresAddress: Sendable, CustomStringConvertible {
    /// The address as given (it may hold a password: never print it; print
    /// `description`).
    package let text: String

    package init(_ text: String) throws(PostgresError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let isURL = trimmed.hasPrefix("postgresql://") || trimmed.hasPrefix("postgres://")
        guard isURL || (trimmed.contains("=") && !trimmed.contains("://")) else {
            throw PostgresError(
                .badAddress,
                "\(PostgresAddress.redacted(trimmed).debugDescription) is not a PostgreSQL address (postgresql://USER@HOST/DB, or key=value pairs)")
        }
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(trimmed, &message) else {
            let reason = message.map { String(cString: $0) } ?? "out of memory"
            if let message { PQfreemem(message) }
            throw PostgresError(.badAddress, "bad PostgreSQL address \(PostgresAddress.redacted(trimmed).debugDescription): \(reason)")
        }
        defer { PQconninfoFree(options) }
        // libpq checks the port only when it connects; a port that cannot be
        // one is a typo, not a server that is down.
        var option = options
        while let keyword = option.pointee.keyword {
            if String(cString: keyword) == "port", let value = option.pointee.val {
                for port in String(cString: value).split(separator: ",", omittingEmptySubsequences: false) {
                    guard let number = Int(port), (1...65535).contains(number) else {
                        throw PostgresError(.badAddress, "bad PostgreSQL address \(PostgresAddress.redacted(trimmed).debugDescription): port \(port.debugDescription) is not a number from 1 to 65535")
                    }
                }
            }
            option += 1
        }
        self.text = trimmed
    }

    /// The address with any password replaced by `***`.
    package var description: String { PostgresAddress.redacted(text) }

    /// Hides `:password@` in a URL, `password=...` in key=value pairs and in a
    /// URL's query.
    static func redacted(_ text: String) -> String {
        var shown = text
        if let scheme = shown.range(of: "://") {
            let authorityEnd = shown[scheme.upperBound...].firstIndex(where: { $0 == "/" || $0 == "?" }) ?? shown.endIndex
            let authority = scheme.upperBound..<authorityEnd
            if let at = shown[authority].lastIndex(of: "@"),
                let colon = shown[scheme.upperBound..<at].firstIndex(of: ":")
            {
                shown.replaceSubrange(shown.index(after: colon)..<at, with: "***")
            }
        }
        // password=VALUE (key=value form, or a URL's ?password=VALUE).
        var result = ""
        var rest = Substring(shown)
        while let found = rest.range(of: "password=") {
            result += rest[..<found.upperBound] + "***"
            var value = rest[found.upperBound...]
            if value.first == "'" {
                // A quoted value ('a b', with \' inside) ends at its closing quote.
                var index = value.index(after: value.startIndex)
                while index < value.endIndex, value[index] != "'" {
                    if value[index] == "\\" { index = value.index(after: index) }
                    if index < value.endIndex { index = value.index(after: index) }
                }
                value = index < value.endIndex ? value[value.index(after: index)...] : value[value.endIndex...]
            } else {
                value = value[(value.firstIndex(where: { $0 == " " || $0 == "&" }) ?? value.endIndex)...]
            }
            rest = value
        }
        return result + rest
    }
}
