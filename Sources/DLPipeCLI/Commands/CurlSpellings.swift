/// curl's and wget's letters that `get` takes where dlpipe already does what
/// they ask, so that a habit neither fails nor misleads:
/// `-O`/`--remote-name` (the name comes from the URL anyway), `-L`/`--location`
/// (redirects are followed), `-C -`/`--continue-at -` (a download resumes by
/// itself), `-f`/`--fail` (an HTTP error fails the download), `-s`/`--silent`
/// (as `-q`). wget's `-O FILE` is refused with a pointer to `-o`, and curl's
/// `-c` stays the cookie jar (RunOptions refuses a URL there).
struct CurlSpellings {
    /// `-s`/`--silent`: as `-q`.
    var silent = false

    /// Takes them out of `args`; `raw` is the command line, to tell curl's
    /// `-O URL` from wget's `-O FILE URL`.
    static func take(_ args: inout Arguments, raw: [String]) throws -> CurlSpellings {
        let command = args.command
        if let file = wgetOutputFile(raw) {
            throw UsageError(
                "-O takes no file name here: it is curl's -O (name the file from the URL, which dlpipe does anyway); "
                    + "for wget's -O \(file), write -o \(file)", command: command)
        }
        _ = args.flag("-O", "--remote-name", "--remote-name-all")
        _ = args.flag("-L", "--location")
        _ = args.flag("-f", "--fail")
        for offset in try args.values("-C", "--continue-at") where offset != "-" {
            throw UsageError(
                "-C \(offset): dlpipe resumes by itself from where an interrupted download's part file ends; only -C - is taken",
                command: command)
        }
        return CurlSpellings(silent: args.flag("-s", "--silent"))
    }

    /// The FILE of a wget-style `-O FILE URL`: `-O` followed by something that
    /// is not a URL (no `://`) while another argument is one.
    static func wgetOutputFile(_ raw: [String]) -> String? {
        let items = Array(raw.prefix { $0 != "--" })
        for index in items.indices.dropLast() where items[index] == "-O" {
            let next = items[index + 1]
            guard !next.contains("://"), next == "-" || !next.hasPrefix("-") else { continue }
            if items.contains(where: { $0.contains("://") }) { return next }
        }
        return nil
    }
}
