import Foundation

/// Files already under the name a download would take that the state has no
/// record of (a lost `.dlpipe/state.db`, a folder wget or `curl -R` filled):
/// the first request asks with the file's modification time, and a 304
/// adopts the file into the state when it proves the file is the server's.
///
/// A server may answer `If-Modified-Since` with 304 whenever its file is not
/// newer (nginx's `if_modified_since before`, Python's http.server), so a
/// user's own file written after the server's would pass the condition. The
/// proof is therefore the 304's own `Last-Modified`, equal to the file's
/// modification time: to the nanosecond, so the file's time must be a whole
/// second, as an HTTP date is. That is the time wget, `curl -R` and dlpipe
/// give the files they write, and a copy that keeps times (`cp -p`, rsync)
/// keeps; a file written at some moment (a user's own, even in the very
/// second the server's changed) has a fraction of a second and is never
/// asked about. Anything else is not adopted, and the body is fetched as for
/// any taken name: beside the file (`name.1.ext`), or over it under
/// `--overwrite`. A file the state knows as any download's is never adopted
/// by another.
extension EngineLoop {
    /// Looks for a file to adopt: the download has no file of its own in the
    /// state. Holds the name while it asks.
    func prepareAdoption(_ job: Job) {
        // `always` wants the server's bytes, whatever is on disk; a request
        // with a body (POST...) has no file to ask conditionally about.
        guard configuration.refresh != .always, job.request.into == .file, job.request.effectiveMethod == "GET",
            job.target == nil
        else { return }
        // The name the first response would give without Content-Disposition.
        let name = job.request.name
            ?? SuggestedName.make(contentDisposition: nil, url: job.request.url, contentType: nil)
        guard let target = try? TargetPath.resolve(
                root: root, directory: job.request.directory, name: name, checkingLeaf: false),
            let facts = targets.reserveExistingFile(target)
        else { return }
        // A time with a fraction of a second cannot be an HTTP date's; a
        // file the state knows is another download's (or this run placed
        // it); a state that cannot answer cannot vouch for the file.
        guard facts.modified % 1_000_000_000 == 0, (try? store?.isDownloadFile(target.relative)) == false else {
            targets.release(target)
            return
        }
        job.claim.holdForAdoption(target, Adoption(facts: facts))
    }

    /// Whether a 304 to the adoption's request proves the file is the
    /// server's: its `Last-Modified` is the file's time (a whole second), a
    /// `Content-Length` (rare in a 304) is the file's size, a
    /// Content-Disposition names the same file, and the file has not changed
    /// since the request went out.
    func adoptionHolds(_ job: Job, _ adoption: Adoption, _ head: ResponseHead) -> Bool {
        guard let target = job.target, let text = head.headers["last-modified"], let date = HTTPDate.parse(text),
            Int64(date.timeIntervalSince1970.rounded(.down)) * 1_000_000_000 == adoption.facts.modified
        else { return false }
        if let text = head.headers["content-length"], let length = Int64(text.trimmingCharacters(in: .whitespaces)),
            length != adoption.facts.size
        {
            return false
        }
        if job.request.name == nil, let header = head.headers["content-disposition"],
            let raw = ContentDisposition.filename(from: header), SafeName.sanitize(raw) != target.name
        {
            return false
        }
        return targets.output.facts(target.relative) == adoption.facts
    }

    /// The file is the server's: from now on the state knows it as placed by
    /// this download, with the 304's validators. No byte is written.
    func adopt(_ job: Job, _ adoption: Adoption, _ head: ResponseHead) {
        guard let target = job.target else { return }
        job.claim.adopt(placed: adoption.facts.placed(at: target.relative))
        job.claim.revalidate(etag: head.headers["etag"], lastModified: head.headers["last-modified"])
    }

    /// The file is not adopted (a 200, or a 304 that proves nothing): the
    /// name is let go, and the body's name is chosen as for any download
    /// (`chooseTarget`: beside the file, or over it under `--overwrite`).
    func dropAdoption(_ job: Job) {
        guard job.adoption != nil else { return }
        if let target = job.target { targets.release(target) }
        job.claim.giveUpAdoption()
    }
}
