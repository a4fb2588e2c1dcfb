import DLPipe

/// A URL on the command line or in a URL list without `scheme://` is taken as
/// http, as curl, wget and aria2 take it: `example.com/a.iso` is
/// `http://example.com/a.iso`. Jobs are code and spell their URLs out:
/// `dl.add` does not guess.
enum DefaultScheme {
    static func applied(to url: String) -> String {
        // A list of a million URLs passes here: the usual ones with one compare.
        if url.utf8.starts(with: "https://".utf8) || url.utf8.starts(with: "http://".utf8) { return url }
        // A line past the URL limit is refused by the engine: no scan of it here.
        if url.utf8.count > URLLimit.maxBytes { return url }
        guard !url.contains("://"), let first = url.unicodeScalars.first,
            first.properties.isAlphabetic || ("0"..."9").contains(first) || first == "["
        else { return url }
        return "http://" + url
    }
}
