import Foundation

/// The layout of a `--record` folder, read by `--replay`: `responses.tsv` has
/// one line per response, `N<TAB>ending<TAB>URL` (ending is 1 when the body
/// arrived whole, 0 when the transfer broke early, 2 when dlpipe stopped
/// reading it: a skip, a cancel, a pause, a refused response), and `N.head` / `N.body` hold its status line and header lines
/// (as received, CRLF) and its body bytes (as received: no content coding
/// undone, chunks joined). Redirect hops are responses of their own.
public enum Recording {
    static let indexName = "responses.tsv"

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
            entries.append(Entry(number: number, ending: ending, url: String(fields[2])))
        }
        return entries
    }
}
