/// A file under the name a download would take that the state has no record
/// of (a lost state, or a folder that wget or `curl -R` filled): the download
/// asks with its modification time (`If-Modified-Since`) and adopts it on a
/// 304 that proves it is the server's file (`EngineLoop+Adoption`).
struct Adoption {
    /// The file as it was when the download started: it must still be so
    /// when the 304 comes.
    let facts: FileFacts
    /// Its modification time as an HTTP date (a whole second: see `prepareAdoption`).
    var ifModifiedSince: String { HTTPDate.format(seconds: facts.modifiedSeconds) }
}

/// A file the state placed that was changed since: where it is, and what changed.
struct LocalChange {
    /// Relative to the output directory.
    let path: String
    /// "its size was 10 bytes, now 12".
    let what: String
}
