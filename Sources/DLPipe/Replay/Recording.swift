import Foundation

/// The layout of a `--record` folder, read by `--replay`: `responses.tsv` has
/// one line per response, `N<TAB>ending<TAB>URL` (ending is 1 when the body
/// arrived whole, 0 when the transfer broke early, 2 when dlpipe stopped
/// reading it: a skip, a cancel, a pause, a refused response), and `N.head` / `N.body` hold its status line and header lines
/// (as received, CRLF) and its body bytes (as received: no content coding
/// undone, chunks joined). Redirect hops are responses of their own.
public enum Recording {
    static let indexName = "responses.tsv"
    /// Every file of a recording: readable by its owner alone.
    static let fileMode: mode_t = 0o600
    /// Header lines never written (lower case): what they hold is a secret.
    static let secretHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    /// A header line as it is recorded: nothing for a secret header, a
    /// `Location` with its user-info as `***@`, any other line as it came.
    static func keptLine(_ line: UnsafeRawBufferPointer) -> [UInt8] {
        guard let colon = line.firstIndex(of: 0x3A) else { return Array(line) }
        let name = String(decoding: line[..<colon], as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercased()
        if secretHeaders.contains(name) { return [] }
        guard name == "location" else { return Array(line) }
        let text = String(decoding: line, as: UTF8.self)
        let redacted = RedactedURL.text(text)
        return Array(redacted.utf8)
    }

    /// How a recorded transfer ended.
    enum Ending: String {
        case whole = "1"
        case broken = "0"
        case stopped = "2"
    }

    struct Entry {
        let number: Int
        let ending: Ending
        let url: String
        var complete: Bool { ending == .whole }
    }

    /// The entries of a recording folder, in the order they were recorded.
    static func read(_ directory: String) throws(DownloadError) -> [Entry] {
        guard let text = try? String(contentsOfFile: directory + "/" + indexName, encoding: .utf8) else {
            throw DownloadError(.io, "\(directory) holds no recording (no \(indexName); make one with --record)")
        }
        var entries: [Entry] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, let number = Int(fields[0]), let ending = Ending(rawValue: String(fields[1])) else {
                throw DownloadError(.io, "\(directory)/\(indexName): a line that is not N<TAB>ending<TAB>URL: \(line.prefix(80))")
            }
            // Matched by the redacted URL: a recording made before redaction
            // still answers.
            entries.append(Entry(number: number, ending: ending, url: RedactedURL.text(String(fields[2]))))
        }
        return entries
    }
}
