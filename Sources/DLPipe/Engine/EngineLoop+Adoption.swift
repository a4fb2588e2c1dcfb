#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Files already in the directory that the state does not know (a lost
/// state.db, a directory wget filled; issue 18). The download asks
/// conditionally with the file's modification time (If-Modified-Since): a 304
/// whose Last-Modified is the file's mtime to the second (as wget and `-R`
/// leave a file) adopts it into the state with no copy written. A file of the
/// user's, written later than the server's, gets a 304 too, but its time is
/// not the server's: it is never adopted (the download asks again, and the
/// no-clobber rule applies). A 200 means the
/// server's file differs: the no-clobber rule holds (`name.1.ext`), unless
/// `--overwrite` lets the new file replace it.
extension EngineLoop {
    /// Called for a download the state has no record of: when the file its
    /// name would be (its own name, else the URL's) is there, ask about it.
    /// One lstat per such download, none per chunk.
    func prepareAdoption(_ job: Job) {
        guard configuration.refresh == .conditional, job.target == nil else { return }
        let name = job.request.name ?? SuggestedName.make(contentDisposition: nil, url: job.request.url, contentType: nil)
        guard let target = try? TargetPath.resolve(root: root, directory: job.request.directory, name: name) else { return }
        var info = stat()
        guard lstat(targets.finalPath(target), &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return }
        job.adoptable = target
        job.adoptableTime = info.st_mtim.tv_sec
        job.conditional = (nil, HTTPDate.format(Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec))))
    }

    /// A 304 to the adoption's question: the file becomes the download's own.
    /// False when its name is taken by another download of this run (the
    /// download then asks again, unconditionally).
    func adopt(_ job: Job, lastModified: String?) -> Bool {
        guard let target = job.adoptable, job.target == nil, let text = lastModified, let date = HTTPDate.parse(text),
            Int(date.timeIntervalSince1970) == job.adoptableTime, targets.reserveExactly(target)
        else { return false }
        job.target = target
        job.ownsTarget = true
        job.placed = FileSystem.identity(targets.finalPath(target)).map {
            PlacedFile(path: target.relative, size: $0.size, inode: $0.inode)
        }
        return true
    }

    /// A 200 to the adoption's question with `--overwrite`: the new file
    /// takes the old one's name (replacing it once whole).
    func overwriteAdoptable(_ job: Job) {
        guard configuration.overwrite, let target = job.adoptable, job.target == nil, targets.reserveExactly(target) else { return }
        job.target = target
        job.ownsTarget = true
    }

    /// The 304 did not show the file to be the server's: ask again without a
    /// condition. With `--overwrite` the file stays the one to replace.
    func dropAdoption(_ job: Job) {
        if !configuration.overwrite { job.adoptable = nil }
        job.conditional = nil
    }
}
