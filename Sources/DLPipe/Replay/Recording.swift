import Foundation

/// The layout of a `--record` folder, read by `--replay`: `responses.tsv` has
/// one line per response, `N<TAB>complete<TAB>URL` (complete is 1 when the
/// body arrived whole, 0 when the transfer ended early: skipped, cancelled,
/// failed), and `N.head` / `N.body` hold its status line and header lines
/// (as received, CRLF) and its body bytes (as received: no content coding
/// undone, chunks joined). Redirect hops are responses of their own.
public enum Recording {
    static let indexName = "responses.tsv"

    struct Entry {
        let number: Int
        let complete: Bool
        let url: String
    }

    /// The entries of a recording folder, in the order they were recorded.
    static func read(_ directory: String) throws(DownloadError) -> [Entry] {
        guard let text = try? String(contentsOfFile: directory + "/" + indexName, encoding: .utf8) else {
            throw DownloadError(.io, "\(directory) holds no recording (no \(indexName); make one with --record)")
        }
        var entries: [Entry] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, let number = Int(fields[0]) else {
                throw DownloadError(.io, "\(directory)/\(indexName): a line that is not N<TAB>complete<TAB>URL: \(line.prefix(80))")
            }
            entries.append(Entry(number: number, complete: fields[1] == "1", url: String(fields[2])))
        }
        return entries
    }
}
