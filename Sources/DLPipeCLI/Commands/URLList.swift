import Foundation

/// Reads a URL list: one URL a line, blank lines and `#` comments ignored.
enum URLList {
    static func read(_ source: String) throws -> [String] {
        let data: Data
        if source == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let contents = FileManager.default.contents(atPath: source) else {
                throw UsageError("cannot read the URL list \(source.debugDescription)", command: "get")
            }
            data = contents
        }
        return lines(of: data)
    }

    /// The non-empty lines that are not `#` comments, trimmed of blanks; LF, CRLF
    /// and CR all end a line.
    /// Works on bytes: a list of 100,000 URLs should cost milliseconds, not the
    /// grapheme and Foundation string work per line it would cost otherwise.
    static func lines(of data: Data) -> [String] {
        func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        var urls: [String] = []
        for line in [UInt8](data).split(whereSeparator: { $0 == 0x0A || $0 == 0x0D }) {
            guard let first = line.firstIndex(where: { !isBlank($0) }),
                  let last = line.lastIndex(where: { !isBlank($0) }),
                  line[first] != UInt8(ascii: "#") else { continue }
            urls.append(String(decoding: line[first...last], as: UTF8.self))
        }
        return urls
    }
}
